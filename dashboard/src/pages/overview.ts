import type { BackendView, OverviewView } from '../../../agent/dashboard-api/wire.js';
import { card, formatBytes, formatDuration, h, notice, pill, table } from '../ui/dom.js';
import { engineNotice } from '../ui/engine-notice.js';
import type { Page } from '../ui/page.js';
import { fetchSettingsProblem } from '../ui/settings-problem.js';

// What the agent found: board, SoC, CPU, accelerators with the evidence for each, backends, and the health of
// the parts around it. Evidence lines are collapsed so the page reads at a glance.

function evidence(lines: readonly string[]): HTMLElement | null {
  if (lines.length === 0) return null;
  return h(
    'details',
    { class: 'evidence' },
    h('summary', {}, 'evidence'),
    h('ul', {}, ...lines.map((l) => h('li', {}, l))),
  );
}

const STEP_MARK: Record<BackendView['steps'][number]['status'], [string, 'ok' | 'bad' | 'muted']> = {
  ok: ['ok', 'ok'],
  fail: ['fail', 'bad'],
  skip: ['skip', 'muted'],
  unchecked: ['not checked', 'muted'],
};

/** A backend's verdict on one line; its evidence chain as a list of steps, collapsed, as `detect` prints it. */
function backendWhy(b: BackendView): HTMLElement {
  const steps = b.steps.map((s) =>
    h(
      'li',
      { 'data-status': s.status },
      pill(...STEP_MARK[s.status]),
      ' ',
      s.step !== null ? h('span', { class: 'step-name' }, s.step) : null,
      s.step !== null ? ' ' : null,
      s.detail,
    ),
  );
  return h(
    'div',
    { class: 'backend-why', 'data-backend': b.backend },
    h('div', { class: 'verdict' }, b.verdict),
    steps.length > 1 || (steps.length === 1 && b.steps[0]!.detail !== b.verdict)
      ? h(
          'details',
          { class: 'evidence' },
          h('summary', {}, `${b.steps.length} step${b.steps.length === 1 ? '' : 's'}`),
          h('ol', { class: 'steps' }, ...steps),
        )
      : null,
  );
}

function statusNotices(o: OverviewView): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (!o.engine.available) out.push(engineNotice(o.engine, 'Models cannot run until this is fixed.'));
  if (o.broker.state === 'unreachable') {
    out.push(
      notice(
        'warn',
        'Broker unreachable',
        `The fleet broker at ${o.broker.url} cannot be reached (${o.broker.error}). The device keeps working and queues telemetry until it is back.`,
        'broker-unreachable',
      ),
    );
  }
  if (!o.health.healthy) out.push(notice('error', 'Unhealthy', o.health.problems.join('; '), 'unhealthy'));
  return out;
}

function deviceFacts(o: OverviewView): HTMLElement {
  const brokerText =
    o.broker.state === 'connected'
      ? `connected to ${o.broker.url}`
      : o.broker.state === 'unreachable'
        ? 'unreachable'
        : 'not used';
  return h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'Device id'),
    h('dd', {}, o.device.deviceId),
    h('dt', {}, 'Agent'),
    h('dd', {}, o.device.version),
    h('dt', {}, 'Uptime'),
    h('dd', { 'data-testid': 'uptime' }, formatDuration(o.device.uptimeS)),
    h('dt', {}, 'Health'),
    h('dd', {}, o.health.healthy ? pill('healthy', 'ok') : pill('unhealthy', 'bad')),
    h('dt', {}, 'Engine'),
    h('dd', {}, o.engine.available ? pill(`MNN ${o.engine.version}`, 'ok') : pill('not available', 'warn')),
    h('dt', {}, 'Fleet broker'),
    h(
      'dd',
      {},
      pill(
        brokerText,
        o.broker.state === 'connected' ? 'ok' : o.broker.state === 'unreachable' ? 'warn' : 'muted',
      ),
    ),
  );
}

/** The CPU clusters (cores, frequencies), its features and the memory: detected once, shown as detected. */
function cpuCard(o: OverviewView) {
  return card(
    'CPU and memory',
    h(
      'p',
      {},
      `${o.cpu.architecture ?? 'unknown architecture'}, ${o.cpu.logicalCpus ?? '?'} logical CPUs, ${formatBytes(o.memory.totalBytes)} RAM`,
    ),
    table(
      ['CPUs', 'Core', 'Max frequency'],
      o.cpu.clusters.map((c) => [
        c.cpus.join(', '),
        c.core ?? 'unknown',
        c.maxFreqKHz ? `${(c.maxFreqKHz / 1e6).toFixed(2)} GHz` : 'unknown',
      ]),
    ),
    o.cpu.features.length > 0 ? h('p', { class: 'sub' }, 'Features: ', o.cpu.features.join(', ')) : null,
  );
}

/** Each accelerator found, its details and the evidence for it. */
function acceleratorsCard(o: OverviewView) {
  return card(
    'Accelerators',
    o.accelerators.length === 0
      ? h('p', { class: 'muted' }, 'None found; models run on the CPU.')
      : h(
          'div',
          { class: 'accelerators', 'data-testid': 'accelerators' },
          ...o.accelerators.map((a) =>
            h(
              'div',
              { class: 'accelerator' },
              h('h3', {}, a.title),
              h(
                'dl',
                { class: 'facts' },
                ...a.details.flatMap((d) => [
                  h('dt', {}, d.label),
                  h('dd', {}, d.value === null ? 'unknown' : String(d.value)),
                ]),
              ),
              a.deviceNodes.length > 0
                ? h('p', { class: 'sub' }, 'Devices: ', a.deviceNodes.join(', '))
                : null,
              evidence(a.evidence),
            ),
          ),
        ),
  );
}

/** MNN's backends and why each is usable or not on this board. */
function backendsCard(o: OverviewView) {
  return card(
    'MNN backends',
    table(
      ['Backend', 'Usable', 'Why'],
      o.backends.map((b) => [b.backend, b.usable ? pill('yes', 'ok') : pill('no', 'muted'), backendWhy(b)]),
    ),
  );
}

/** The thermal zones, when the board has any. */
function thermalCard(o: OverviewView) {
  return o.thermal.length > 0
    ? card(
        'Temperatures',
        table(
          ['Zone', 'Type', '°C'],
          o.thermal.map((z) => [z.zone, z.type ?? '', z.tempC === null ? 'unknown' : z.tempC.toFixed(1)]),
        ),
      )
    : null;
}

/** How often the open page re-reads health, uptime and the broker: a slot that fails or recovers shows up. */
const REFRESH_MS = 5000;

export const overviewPage: Page = async (ctx) => {
  const o = await ctx.api.get<OverviewView>('/api/overview');
  const boardName = o.board.model.value ?? 'Unknown board';
  const socName = [o.soc.vendor.value, o.soc.name.value].filter(Boolean).join(' ') || 'Unknown SoC';

  // The facts that change while the page is open (health, uptime, broker) live in holders that a periodic
  // refresh rebuilds; the rest, with its evidence lists a reader may have opened, is built once.
  const status = h('div', { class: 'stack', 'data-testid': 'overview-status' }, ...statusNotices(o));
  const facts = h('div', {}, deviceFacts(o));
  const summary = card(
    'Device',
    h('p', { class: 'headline', 'data-testid': 'board-name' }, boardName),
    h(
      'p',
      { class: 'sub', 'data-testid': 'soc-name' },
      socName,
      o.soc.family.value ? ` · ${o.soc.family.value}` : '',
    ),
    evidence([...o.board.model.evidence, ...o.soc.name.evidence]),
    facts,
  );

  const detected = o.detectedAt ? h('p', { class: 'sub' }, `Detected at ${o.detectedAt}`) : null;
  let busy = false;
  const refresh = async () => {
    if (busy) return;
    busy = true;
    try {
      const now = await ctx.api.get<OverviewView>('/api/overview');
      status.replaceChildren(...statusNotices(now));
      facts.replaceChildren(deviceFacts(now));
    } finally {
      busy = false;
    }
  };
  // A failed refresh leaves the last view on screen; the next one tries again.
  const timer = setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Overview'),
      await fetchSettingsProblem(ctx.api),
      status,
      h('div', { class: 'grid' }, summary, cpuCard(o), acceleratorsCard(o), backendsCard(o), thermalCard(o)),
      detected,
    ),
    dispose: () => clearInterval(timer),
  };
};
