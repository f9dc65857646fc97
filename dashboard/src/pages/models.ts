import {
  type Candidate,
  describeLoadSplit,
  type InstalledModelView,
  type InstallProgressView,
  type InstanceLoad,
  type LoadTimeRecord,
  type PlacementView,
  type SlotConstraints,
  type SlotName,
  type SlotPhase,
  type SlotState,
  type SlotStats,
} from '../../../agent/dashboard-api/wire.js';
import { ApiError } from '../ui/api.js';
import { card, formatBytes, h, notice, pill, table, tagged } from '../ui/dom.js';
import { engineNotice } from '../ui/engine-notice.js';
import type { Page, PageContext } from '../ui/page.js';
import { quantText } from '../ui/quant.js';
import { getModelsCard } from './get-models.js';
import { type SlotAssignment, slotAssignment, useForButtons } from './slot-assign.js';

// Slots, what serves each and why, the fallback chain, and the operator's levers: pin a backend or variant,
// unpin, re-plan. Installed models and imports in progress below. Refreshed every few seconds so a swap can
// be watched as it happens.

interface ModelsResponse {
  installed: InstalledModelView[];
  installs: InstallProgressView[];
  hint?: string;
}

type PlacementResponse = PlacementView & {
  engine: { available: true } | { available: false; reason: string; fix?: string };
};

const PHASE_KIND: Record<SlotPhase, 'ok' | 'warn' | 'bad' | 'muted'> = {
  serving: 'ok',
  builtin: 'ok',
  degraded: 'warn',
  fallback: 'warn',
  loading: 'muted',
  planned: 'muted',
  failed: 'bad',
  disabled: 'muted',
};

function candidateText(c: Candidate): string {
  const n = c.config.thread_num;
  const threads = c.config.backend_type === 'cpu' ? `, ${n} thread${n === 1 ? '' : 's'}` : '';
  return `${c.modelId}@${c.version} (${c.variantId}) on ${c.config.backend_type}${threads}`;
}

/**
 * The slot's state in a sentence, what was planned when it differs, the OTA job that selected its version, and
 * the planner's reasons with numbers.
 */
function slotCells(
  s: SlotState,
  ota: { version: string; setBy: string } | undefined,
): [HTMLElement, HTMLElement] {
  const model = h(
    'span',
    {},
    h('span', { 'data-testid': 'slot-summary' }, s.summary),
    s.planned && s.servedBy && s.servedBy.label !== s.planned.label
      ? h('small', { class: 'sub' }, h('br'), `planned: ${s.planned.label}`)
      : null,
    ota
      ? h(
          'small',
          { class: 'sub', 'data-testid': 'slot-ota' },
          h('br'),
          `version ${ota.version} set by ${ota.setBy}`,
        )
      : null,
  );
  const why = h(
    'div',
    { class: 'why' },
    s.reason
      ? h('p', { class: s.servable ? 'reason' : 'reason bad', 'data-testid': 'slot-reason' }, s.reason)
      : null,
    s.why.length > 0 ? h('ul', {}, ...s.why.map((w) => h('li', {}, w))) : null,
  );
  return [model, why];
}

const NO_SLOTS =
  'Nothing is asked of this device yet. Pick a model for a slot above, or press "Use for …" beside an ' +
  'installed model below; or name an installed model in a slot of the configuration file, e.g. ' +
  '`"slots": { "voice.llm": { "model": "<model id>" } }` in /etc/mnn-edge/agent.json (or the file given with ' +
  '--config), then reload the agent: `systemctl reload mnn-edge`.';

function pinControls(
  ctx: PageContext,
  slot: SlotName,
  pin: SlotConstraints | undefined,
  backends: PlacementView['pinOptions'],
  onChange: () => void,
  status: HTMLElement,
): HTMLElement {
  // Only what this board can use is offered; the rest stay in the list, greyed, with the reason they cannot be.
  const backend = h(
    'select',
    { 'aria-label': `Backend for ${slot}`, 'data-testid': `pin-backend-${slot}` },
    ...backends.map((b) =>
      b.usable
        ? h('option', { value: b.backend, selected: pin?.backend === b.backend }, b.backend)
        : h(
            'option',
            { value: b.backend, disabled: true, title: b.reason },
            `${b.backend}: not usable (${b.reason})`,
          ),
    ),
  );
  const threads = h('input', {
    type: 'number',
    min: 1,
    max: 64,
    placeholder: 'threads',
    'aria-label': `Threads for ${slot}`,
    class: 'narrow',
  });
  const run = async (what: () => Promise<unknown>) => {
    status.textContent = '';
    try {
      await what();
      onChange();
    } catch (err) {
      status.textContent = err instanceof ApiError ? err.message : String(err);
    }
  };
  const pinBtn = h('button', { type: 'button' }, 'Pin');
  pinBtn.addEventListener('click', () =>
    run(() =>
      ctx.api.send('PUT', `/api/placement/${encodeURIComponent(slot)}/pin`, {
        backend: backend.value,
        ...(threads.value ? { threads: Number(threads.value) } : {}),
      }),
    ),
  );
  const unpin = h('button', { type: 'button', disabled: pin === undefined }, 'Unpin');
  unpin.addEventListener('click', () =>
    run(() => ctx.api.send('DELETE', `/api/placement/${encodeURIComponent(slot)}/pin`)),
  );
  const current = pin
    ? h(
        'small',
        { class: 'pinned' },
        `pinned: ${Object.entries(pin)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      )
    : null;
  return h('span', { class: 'controls' }, backend, threads, pinBtn, unpin, current);
}

function loadText(load: InstanceLoad): string {
  const ms = `${load.ms.toLocaleString('en')} ms`;
  if (load.cache === 'none') return ms;
  return `${ms} (${load.cache === 'warm' ? 'warm: kernel cache used' : 'cold: kernels compiled'})`;
}

/** The latest cold and warm load of each model on each backend: what a GPU kernel cache saves. */
function loadTimesTable(loads: LoadTimeRecord[]): HTMLElement {
  const ms = (v: number | undefined) => (v === undefined ? '—' : `${v.toLocaleString('en')} ms`);
  return tagged(
    'load-times',
    table(
      ['Model', 'Backend', 'Cold (no kernel cache)', 'Warm (kernel cache)', 'Loads'],
      loads.map((l) =>
        l.noCacheMs !== undefined && l.coldMs === undefined && l.warmMs === undefined
          ? [l.model, l.backend, `${ms(l.noCacheMs)} (no kernel cache on ${l.backend})`, '—', l.loads]
          : [l.model, l.backend, ms(l.coldMs), ms(l.warmMs), l.loads],
      ),
    ),
  );
}

/** "hit (own context 1)": the last generation's verdict, why not all of it, and the conversation context. */
function lastReuseText(kv: NonNullable<SlotStats['kv']>): string {
  const last = kv.last;
  if (!last) return '—';
  const why = last.reason ? ` (${last.reason})` : '';
  const where =
    last.route !== undefined && last.route !== 'only'
      ? ` · context ${last.context ?? 0} of ${last.contexts ?? 1}, ${last.route}`
      : '';
  const snapshots = last.snapshotBytes ? ` · snapshots ${formatBytes(last.snapshotBytes)}` : '';
  const chunk = last.chunkTokens ? ` · chunk ${last.chunkTokens}` : '';
  return `${last.outcome}${why} ${last.reusedTokens}/${last.reusedTokens + last.prefilledTokens} kept${chunk}${where}${snapshots}${last.newHost ? ' · new host' : ''}`;
}

/** Per slot: how its generations used the KV their engine host held (hit / partial / miss) and the last one. */
function kvReuseTable(stats: SlotStats[]): HTMLElement | null {
  const rows = stats.filter((s) => s.kv !== undefined);
  if (rows.length === 0) return null;
  return tagged(
    'kv-reuse',
    table(
      ['Slot', 'Hit / partial / miss', 'Prompt tokens kept', 'Last generation'],
      rows.map((s) => {
        const kv = s.kv!;
        const total = kv.reusedTokens + kv.prefilledTokens;
        return [
          h('code', {}, s.slot),
          `${kv.hits} / ${kv.partials} / ${kv.misses}`,
          total > 0
            ? `${kv.reusedTokens} of ${total} (${Math.round((kv.reusedTokens / total) * 100)} %)`
            : '—',
          lastReuseText(kv),
        ];
      }),
    ),
  );
}

async function placementCard(ctx: PageContext, refresh: () => void): Promise<HTMLElement> {
  let view: PlacementResponse;
  try {
    view = await ctx.api.get<PlacementResponse>('/api/placement');
  } catch (err) {
    if (err instanceof ApiError && err.status === 503)
      return card('Placement', notice('warn', 'Runtime not running', err.message, 'runtime-unavailable'));
    throw err;
  }
  const status = h('p', { class: 'form-error', role: 'alert' });
  const replan = h('button', { type: 'button', 'data-testid': 'replan' }, 'Re-plan now');
  replan.addEventListener('click', async () => {
    try {
      await ctx.api.send('POST', '/api/placement/replan');
      refresh();
    } catch (err) {
      status.textContent = err instanceof ApiError ? err.message : String(err);
    }
  });
  const p = view.placement;
  const parts: Array<HTMLElement | null> = [];
  if (!view.engine.available) parts.push(engineNotice(view.engine, 'No slot can serve a model until it is.'));
  if (view.slotStates.length === 0) {
    parts.push(notice('info', 'No slots configured', NO_SLOTS, 'no-slots'));
  } else {
    if (p !== undefined)
      parts.push(
        h(
          'p',
          { class: 'sub' },
          `Board ${p.boardId} · engine ${p.engineVersion || 'not available'} · planned ${formatBytes(p.budget.plannedBytes)} of ${formatBytes(p.budget.budgetBytes)} (${p.budget.reason})`,
        ),
      );
    parts.push(
      tagged(
        'slots',
        table(
          ['Slot', 'State', 'Model', 'Why', 'Pin'],
          view.slotStates.map((s) => [
            h('code', {}, s.slot),
            tagged(`slot-phase-${s.slot}`, pill(s.phase, PHASE_KIND[s.phase])),
            ...slotCells(s, view.otaVersions?.[s.slot]),
            s.phase === 'builtin' || s.phase === 'disabled'
              ? '—'
              : pinControls(ctx, s.slot, view.pins[s.slot], view.pinOptions, refresh, status),
          ]),
        ),
      ),
    );
    parts.push(kvReuseTable(view.slotStats ?? []));
    // Why each instance runs where it does: the numbers behind the choice and every rejected candidate.
    for (const inst of p?.instances ?? [])
      parts.push(
        tagged(
          'placement-reasons',
          h(
            'details',
            {},
            h('summary', {}, `Why ${candidateText(inst.chosen)}`),
            h('ul', {}, ...inst.reasons.map((r) => h('li', {}, r))),
          ),
        ),
      );
    for (const inst of p?.instances ?? []) {
      if (inst.fallback.length === 0) continue;
      parts.push(
        h(
          'p',
          { class: 'sub' },
          `If ${candidateText(inst.chosen)} fails, ${inst.slots.join(', ')} fall back to: `,
          inst.fallback.map(candidateText).join(' → '),
        ),
      );
    }
  }
  for (const b of view.backends ?? [])
    parts.push(
      notice(
        'warn',
        `Backend ${b.backend} ${b.status === 'recovering' ? 'recovering' : 'down'}`,
        `${b.reason}. Held until probes in fresh engine hosts pass (${b.successes} in a row so far)` +
          (b.lastProbe ? `; last probe ${b.lastProbe}` : ''),
        'backend-down',
      ),
    );
  for (const s of view.slotStates)
    if (s.phase === 'fallback' && s.reason)
      parts.push(notice('warn', `Running a fallback on ${s.slot}`, s.reason));
  if (view.instances.length > 0) {
    parts.push(
      h('h3', {}, 'Engine hosts'),
      table(
        ['Model', 'Serves', 'Status', 'PID', 'Memory', 'Load', 'Start', 'In flight'],
        view.instances.map((i) => {
          const c = p?.instances
            .flatMap((pi) => [pi.chosen, ...pi.fallback])
            .find((cand) => cand.key === i.key);
          return [
            c ? candidateText(c) : i.key,
            i.slots.join(', ') || '—',
            i.status,
            i.pid,
            formatBytes(i.rssBytes),
            i.load ? loadText(i.load) : '—',
            // Host start, reading the weights, MNN's load and the warm-up: what to look at when a start is slow.
            describeLoadSplit(i.loadSplit) ?? '—',
            i.inflight,
          ];
        }),
      ),
    );
  }
  const loads = view.loadTimes ?? [];
  if (loads.length > 0) parts.push(h('h3', {}, 'Load times'), loadTimesTable(loads));
  return card('Placement', h('p', { class: 'toolbar' }, replan), status, ...parts);
}

async function modelsCard(
  ctx: PageContext,
  assign: SlotAssignment,
): Promise<{ element: HTMLElement; installed?: InstalledModelView[] }> {
  let res: ModelsResponse;
  try {
    res = await ctx.api.get<ModelsResponse>('/api/models');
  } catch (err) {
    if (err instanceof ApiError && err.status === 503)
      return { element: card('Installed models', notice('warn', 'Model store unavailable', err.message)) };
    throw err;
  }
  const installs = res.installs.map((i) =>
    h(
      'div',
      { class: 'install' },
      h('span', {}, `${i.ref}: ${i.step}`),
      h('progress', { max: Math.max(1, i.totalBytes), value: i.doneBytes }),
      i.error
        ? h('span', { class: 'form-error' }, i.error)
        : h('small', {}, `${formatBytes(i.doneBytes)} / ${formatBytes(i.totalBytes)}`),
    ),
  );
  const element = card(
    'Installed models',
    res.installed.length === 0
      ? notice(
          'info',
          'No models installed',
          res.hint ?? 'Install a model package to get started.',
          'no-models',
        )
      : tagged(
          'installed-models',
          table(
            ['Model', 'Version', 'Kind', 'Size', 'Variants', 'Source', 'Use for'],
            res.installed.map((m) => [
              m.id,
              m.version,
              m.kind,
              formatBytes(m.sizeBytes),
              m.variants.map((v) => `${v.id} (${quantText(v.quant)}; ${v.backends.join('/')})`).join(', '),
              m.pulledFrom
                ? h(
                    'span',
                    { 'data-testid': 'model-source' },
                    `${m.pulledFrom.hub} ${m.pulledFrom.repo}@${m.pulledFrom.commit.slice(0, 12)} `,
                    pill('unsigned (trust on first use)', 'warn'),
                  )
                : 'package',
              useForButtons(m, assign),
            ]),
          ),
        ),
    installs.length > 0 ? h('div', { class: 'installs' }, h('h3', {}, 'Installing'), ...installs) : null,
  );
  return { element, installed: res.installed };
}

export const modelsPage: Page = async (ctx) => {
  const body = h('div', { class: 'stack' });
  let busy = false;
  const assign = slotAssignment(ctx, () => void refresh(true).catch(() => undefined));
  const refresh = async (afterAction = false) => {
    if (busy) return;
    busy = true;
    try {
      const [placement, models] = await Promise.all([
        placementCard(ctx, () => void refresh(true)),
        modelsCard(ctx, assign),
      ]);
      await assign.refresh(models.installed);
      // The periodic refresh does not rebuild under a pin field being edited; an action's refresh always does.
      const focus = document.activeElement;
      const editing =
        (focus instanceof HTMLInputElement || focus instanceof HTMLSelectElement) && body.contains(focus);
      if (afterAction || !editing) body.replaceChildren(placement, models.element);
    } finally {
      busy = false;
    }
  };
  await refresh();
  const timer = setInterval(() => void refresh().catch(() => undefined), 4000);
  // Built once, below the refreshed cards: searches, the recommended list and pulls in flight stay on screen.
  const getModels = getModelsCard(ctx, () => void refresh(true).catch(() => undefined));
  return {
    element: h(
      'div',
      { class: 'page' },
      h('h1', {}, 'Models & placement'),
      assign.element,
      body,
      getModels.element,
    ),
    dispose: () => {
      clearInterval(timer);
      getModels.dispose();
    },
  };
};
