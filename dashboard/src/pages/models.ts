import type {
  InstalledModelView,
  InstallProgressView,
  PlacementView,
} from '../../../agent/dashboard/ports.js';
import type { Candidate, SlotConstraints, SlotName } from '../../../agent/plan/types.js';
import { ApiError } from '../api.js';
import { card, formatBytes, h, notice, pill, table, tagged } from '../dom.js';
import type { Page, PageContext } from '../page.js';

// Slots, what serves each and why, the fallback chain, and the operator's levers: pin a backend or variant,
// unpin, re-plan. Installed models and imports in progress below. Refreshed every few seconds so a swap can
// be watched as it happens.

interface ModelsResponse {
  installed: InstalledModelView[];
  installs: InstallProgressView[];
  hint?: string;
}

type PlacementResponse = PlacementView & { engine: { available: boolean; reason?: string } };

const BACKENDS = ['cpu', 'opencl', 'vulkan', 'cuda', 'npu', 'hexagon'];

function candidateText(c: Candidate): string {
  return `${c.modelId}@${c.version}/${c.variantId} on ${c.config.backend_type} × ${c.config.thread_num}`;
}

function pinControls(
  ctx: PageContext,
  slot: SlotName,
  pin: SlotConstraints | undefined,
  onChange: () => void,
  status: HTMLElement,
): HTMLElement {
  const backend = h(
    'select',
    { 'aria-label': `Backend for ${slot}` },
    ...BACKENDS.map((b) => h('option', { value: b }, b)),
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
  if (!view.engine.available)
    parts.push(
      notice(
        'warn',
        'Engine not available',
        `${view.engine.reason ?? ''} Slots stay unloaded until the engine is installed.`,
        'engine-unavailable',
      ),
    );
  if (p === undefined) {
    parts.push(
      notice(
        'info',
        'Nothing planned yet',
        'The planner has not produced a placement. Install a model, then press “Re-plan now”.',
      ),
    );
  } else {
    parts.push(
      h(
        'p',
        { class: 'sub' },
        `Board ${p.boardId} · engine ${p.engineVersion} · planned ${formatBytes(p.budget.plannedBytes)} of ${formatBytes(p.budget.budgetBytes)} (${p.budget.reason})`,
      ),
      tagged(
        'slots',
        table(
          ['Slot', 'Status', 'Serving', 'Why', 'Pin'],
          p.slots.map((s) => {
            const inst = p.instances.find((i) => i.key === s.instanceKey);
            const serving = view.serving[s.slot];
            return [
              h('code', {}, s.slot),
              pill(
                s.status,
                s.status === 'placed' || s.status === 'builtin'
                  ? 'ok'
                  : s.status === 'degraded'
                    ? 'warn'
                    : 'muted',
              ),
              inst
                ? h(
                    'span',
                    {},
                    candidateText(inst.chosen),
                    h('br'),
                    h('small', {}, inst.chosen.summary),
                    serving && serving !== inst.key
                      ? h('small', { class: 'warn' }, ` · running fallback ${serving}`)
                      : null,
                  )
                : (s.builtin ?? '—'),
              h('span', {}, s.reasons.join(' ')),
              pinControls(ctx, s.slot, view.pins[s.slot], refresh, status),
            ];
          }),
        ),
      ),
    );
    for (const inst of p.instances) {
      if (inst.fallback.length === 0) continue;
      parts.push(
        h(
          'p',
          { class: 'sub' },
          `Fallback for ${inst.slots.join(', ')}: `,
          inst.fallback.map(candidateText).join(' → '),
        ),
      );
    }
  }
  for (const f of view.fallbacks)
    parts.push(
      notice('warn', 'Running a fallback', `${f.activeKey} instead of ${f.plannedKey}: ${f.reason}`),
    );
  if (view.instances.length > 0) {
    parts.push(
      h('h3', {}, 'Engine hosts'),
      table(
        ['Instance', 'Status', 'PID', 'Memory', 'In flight'],
        view.instances.map((i) => [i.key, i.status, i.pid, formatBytes(i.rssBytes), i.inflight]),
      ),
    );
  }
  return card('Placement', h('p', { class: 'toolbar' }, replan), status, ...parts);
}

async function modelsCard(ctx: PageContext): Promise<HTMLElement> {
  let res: ModelsResponse;
  try {
    res = await ctx.api.get<ModelsResponse>('/api/models');
  } catch (err) {
    if (err instanceof ApiError && err.status === 503)
      return card('Installed models', notice('warn', 'Model store unavailable', err.message));
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
  return card(
    'Installed models',
    res.installed.length === 0
      ? notice(
          'info',
          'No models installed',
          res.hint ?? 'Install a model package to get started.',
          'no-models',
        )
      : table(
          ['Model', 'Version', 'Kind', 'Size', 'Variants'],
          res.installed.map((m) => [
            m.id,
            m.version,
            m.kind,
            formatBytes(m.sizeBytes),
            m.variants.map((v) => `${v.id} (${v.quant}; ${v.backends.join('/')})`).join(', '),
          ]),
        ),
    installs.length > 0 ? h('div', { class: 'installs' }, h('h3', {}, 'Installing'), ...installs) : null,
  );
}

export const modelsPage: Page = async (ctx) => {
  const body = h('div', { class: 'stack' });
  let busy = false;
  const refresh = async (afterAction = false) => {
    if (busy) return;
    busy = true;
    try {
      const [placement, models] = await Promise.all([
        placementCard(ctx, () => void refresh(true)),
        modelsCard(ctx),
      ]);
      // The periodic refresh does not rebuild under a pin field being edited; an action's refresh always does.
      const focus = document.activeElement;
      const editing =
        (focus instanceof HTMLInputElement || focus instanceof HTMLSelectElement) && body.contains(focus);
      if (afterAction || !editing) body.replaceChildren(placement, models);
    } finally {
      busy = false;
    }
  };
  await refresh();
  const timer = setInterval(() => void refresh().catch(() => undefined), 4000);
  return {
    element: h('div', { class: 'page' }, h('h1', {}, 'Models & placement'), body),
    dispose: () => clearInterval(timer),
  };
};
