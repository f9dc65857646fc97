import {
  type InstalledModelView,
  type PlacementView,
  SLOT_KINDS,
  SLOT_NAMES,
  type SlotName,
  type SlotState,
} from '../../../agent/dashboard-api/wire.js';
import { ApiError, revisionOf } from '../ui/api.js';
import { card, h, notice, tagged } from '../ui/dom.js';
import type { PageContext } from '../ui/page.js';
import { type ConfigView, SOURCE_TEXT } from '../ui/settings-fields.js';
import { settingsProblemNotice } from '../ui/settings-problem.js';
import { type SlotChoice, slotChoices, slotPatch, slotValue } from '../ui/slot-choice.js';

// Which model each slot serves, changed from the page: every change is a merge patch of the run-time settings
// (PATCH /api/config, guarded by the revision the page read), which the agent checks against the installed
// models and the planner before it writes anything. The answer shown stays until the next change: the new
// placement with the planner's reasons, the refusal with "nothing was changed", or someone else's change first.

export interface SlotAssignment {
  element: HTMLElement;
  /** Re-reads the settings and the installed models (skipped while a select has focus or a change runs). */
  refresh(installed?: readonly InstalledModelView[]): Promise<void>;
  /** "Use for <slot>" from the installed models' table. */
  use(slot: SlotName, modelId: string): Promise<void>;
}

/** The "Use for …" buttons of one installed model: the slots its task fits. */
export function useForButtons(
  model: InstalledModelView,
  assign: Pick<SlotAssignment, 'use'>,
): HTMLElement | string {
  const slots = SLOT_NAMES.filter((s) => (SLOT_KINDS[s] as readonly string[]).includes(model.kind));
  if (slots.length === 0) return '—';
  return h(
    'span',
    { class: 'controls' },
    ...slots.map((slot) => {
      const b = h(
        'button',
        { type: 'button', 'data-testid': `use-${model.id}-for-${slot}` },
        `Use for ${slot}`,
      );
      b.addEventListener('click', () => void assign.use(slot, model.id));
      return b;
    }),
  );
}

const SETTLE_MS = 60_000;

/** Waits until the slot serves, fails or stops loading: the answer the user is waiting for. */
async function settledSlot(
  ctx: PageContext,
  slot: SlotName,
): Promise<{ view: PlacementView; state?: SlotState }> {
  const until = Date.now() + SETTLE_MS;
  for (;;) {
    const view = await ctx.api.get<PlacementView>('/api/placement');
    const state = view.slotStates.find((s) => s.slot === slot);
    const waiting = state && (state.phase === 'loading' || state.phase === 'planned');
    if (!waiting || Date.now() > until) return { view, ...(state ? { state } : {}) };
    await new Promise((r) => setTimeout(r, 150));
  }
}

function placementResult(
  slot: SlotName,
  revision: number,
  view: PlacementView,
  state?: SlotState,
): HTMLElement {
  const inst = view.placement?.instances.find((i) => i.slots.includes(slot));
  const ok = !state || state.servable || state.phase === 'disabled';
  return tagged(
    'slot-change-result',
    h(
      'div',
      { class: `notice ${ok ? 'info' : 'warn'}`, role: 'status' },
      h(
        'strong',
        {},
        `Settings revision ${revision}: ${slot} ${state ? `is ${state.phase}` : 'has no model now'}`,
      ),
      state ? h('p', { 'data-testid': 'slot-change-summary' }, state.summary) : null,
      state?.reason ? h('p', {}, state.reason) : null,
      inst
        ? h('ul', { 'data-testid': 'slot-change-reasons' }, ...inst.reasons.map((r) => h('li', {}, r)))
        : null,
    ),
  );
}

export function slotAssignment(ctx: PageContext, onChanged: () => void): SlotAssignment {
  const result = h('div', { 'data-testid': 'slot-change' });
  const table = h('div');
  const element = card(
    'Which model each slot serves',
    h(
      'p',
      { class: 'sub' },
      'A change is kept in the run-time settings (it wins over the configuration file) and re-plans at once; ' +
        'the planner may refuse it, and then nothing changes.',
    ),
    table,
    result,
  );
  let view: ConfigView | undefined;
  let installed: readonly InstalledModelView[] = [];
  let busy = false;

  const apply = async (slot: SlotName, choice: SlotChoice) => {
    if (!view || busy) return;
    busy = true;
    const revision = view.revision;
    result.replaceChildren(h('p', { class: 'loading' }, `Changing ${slot}…`));
    try {
      const patch = slotPatch(slot, choice, view.keys);
      const answer = await ctx.api.patch<{ revision: number }>('/api/config', patch, revision);
      const { view: placement, state } = await settledSlot(ctx, slot);
      result.replaceChildren(placementResult(slot, answer.revision, placement, state));
    } catch (err) {
      result.replaceChildren(errorNotice(err, slot));
    } finally {
      busy = false;
      await refresh(undefined, true).catch(() => undefined);
      onChanged();
    }
  };

  const render = () => {
    if (!view) return;
    const rows = SLOT_NAMES.map((slot) => {
      const current = slotValue(slot, view!.keys);
      const options = slotChoices(slot, current, installed);
      const select = h(
        'select',
        { 'aria-label': `Model for ${slot}`, 'data-testid': `slot-model-${slot}` },
        ...options.map((o) => h('option', { value: o.value, selected: o.value === current.value }, o.label)),
      );
      select.addEventListener('change', () => {
        const o = options.find((x) => x.value === select.value);
        if (o) void apply(slot, o.choice);
      });
      return h(
        'tr',
        {},
        h('td', {}, h('code', {}, slot)),
        h('td', {}, select),
        h('td', {}, current.source ? SOURCE_TEXT[current.source] : '—'),
      );
    });
    table.replaceChildren(
      view.problem ? settingsProblemNotice(view.problem) : '',
      tagged(
        'slot-assign',
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Slot'), h('th', {}, 'Model'), h('th', {}, 'Set by'))),
          h('tbody', {}, ...rows),
        ),
      ),
    );
  };

  const refresh = async (models?: readonly InstalledModelView[], force = false) => {
    if (busy && !force) return;
    const focus = document.activeElement;
    if (!force && focus instanceof HTMLSelectElement && element.contains(focus)) return;
    try {
      view = await ctx.api.get<ConfigView>('/api/config');
    } catch (err) {
      const message =
        err instanceof ApiError && err.status === 404
          ? 'This agent runs without run-time settings: name models in the slots of its configuration file.'
          : (err as Error).message;
      table.replaceChildren(notice('warn', 'Run-time settings unavailable', message, 'settings-unavailable'));
      return;
    }
    if (models) installed = models;
    render();
  };

  const use = async (slot: SlotName, modelId: string) => {
    if (!view) await refresh(undefined, true);
    await apply(slot, { model: modelId });
  };
  return { element, refresh, use };
}

/** A refusal, a conflict or a bad value: said so, with what happens next. */
export function errorNotice(err: unknown, what: string): HTMLElement {
  if (err instanceof ApiError && err.code === 'revision_conflict') {
    const now = revisionOf(err.etag);
    return tagged(
      'settings-conflict',
      notice(
        'warn',
        `Someone else changed the settings first${now !== undefined ? ` (now at revision ${now})` : ''}`,
        `${err.message}. Nothing of yours was changed; the values shown were reloaded — check them and try again.`,
      ),
    );
  }
  if (err instanceof ApiError && err.code === 'refused')
    return tagged(
      'settings-refused',
      notice('error', `Refused: ${what} was not changed`, `${err.message}. Nothing was changed.`),
    );
  const message = err instanceof Error ? err.message : String(err);
  return tagged('settings-error', notice('error', `${what} was not changed`, message));
}
