import type { AssistantTimersAnswer, AssistantTimerView } from '../../../agent/dashboard-api/wire.js';
import { timeLeft } from '../chat/transcript.js';
import { ApiError } from '../ui/api.js';
import { card, h, notice } from '../ui/dom.js';
import type { PageContext } from '../ui/page.js';

// The assistant's active timers (set by voice or by the typed chat), each with the time left and a Cancel
// button. Read again every few seconds and after every answer, so a timer the assistant just set shows up; the
// countdown itself ticks here, between reads.

const REFRESH_MS = 5000;

/** A timer's row: its label, the time left (filled in by the caller every second) and Cancel. */
function timerRow(
  ctx: PageContext,
  t: AssistantTimerView,
  status: HTMLElement,
  cancelled: () => void,
): { li: HTMLElement; left: HTMLElement } {
  const cancel = h(
    'button',
    { type: 'button', 'data-testid': 'timer-cancel', 'aria-label': `Cancel timer ${t.label || t.id}` },
    'Cancel',
  );
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await ctx.api.send('DELETE', `/api/assistant/timers/${encodeURIComponent(t.id)}`);
      status.replaceChildren();
      cancelled();
    } catch (err) {
      cancel.disabled = false;
      status.replaceChildren(notice('error', 'Timer not cancelled', (err as Error).message, 'timer-error'));
    }
  });
  const left = h('span', {});
  const li = h(
    'li',
    { class: 'timer-row', 'data-testid': 'timer', 'data-id': t.id },
    h('strong', {}, t.label || 'Timer'),
    ' · ',
    left,
    ` (at ${new Date(t.dueAt).toLocaleTimeString()}) `,
    cancel,
  );
  return { li, left };
}

export function timersCard(ctx: PageContext): { element: HTMLElement; refresh(): void; dispose(): void } {
  const list = h('ul', { class: 'timers', 'data-testid': 'timers' });
  const status = h('div', { 'data-testid': 'timers-status' });
  let timers: AssistantTimerView[] = [];
  let missing = false;

  // One row per timer, kept across redraws: the countdown ticks every second and must not take the keyboard
  // focus off a Cancel button.
  const rows = new Map<string, { li: HTMLElement; left: HTMLElement }>();
  const row = (t: AssistantTimerView) =>
    timerRow(ctx, t, status, () => {
      timers = timers.filter((x) => x.id !== t.id);
      draw();
    });
  const empty = h('li', { class: 'sub' }, 'No timers running. Ask the assistant to set one.');

  const draw = () => {
    const now = Date.now();
    const ids = new Set(timers.map((t) => t.id));
    for (const [id, r] of rows) {
      if (!ids.has(id)) {
        r.li.remove();
        rows.delete(id);
      }
    }
    for (const [i, t] of timers.entries()) {
      let r = rows.get(t.id);
      if (!r) {
        r = row(t);
        rows.set(t.id, r);
      }
      r.left.textContent = timeLeft(t.dueAt, now);
      // In due order; a row already in its place is not moved (moving a node takes the focus off it).
      if (list.children[i] !== r.li) list.insertBefore(r.li, list.children[i] ?? null);
    }
    if (timers.length === 0 && !missing) list.append(empty);
    else empty.remove();
  };

  const refresh = async () => {
    try {
      const listed = await ctx.api.get<AssistantTimersAnswer>('/api/assistant/timers');
      // The panel is for what still rings: the recently ended ones are in the answer too.
      timers = listed.timers.filter((x) => x.state === 'running').sort((a, b) => a.dueAt - b.dueAt);
      missing = false;
      status.replaceChildren();
    } catch (err) {
      timers = [];
      missing = err instanceof ApiError && err.status === 404;
      status.replaceChildren(
        missing
          ? notice(
              'info',
              'No timers here',
              'This agent has no assistant timers (GET /api/assistant/timers answered 404).',
            )
          : notice('warn', 'Timers could not be read', (err as Error).message),
      );
    }
    draw();
  };

  void refresh();
  const poll = setInterval(() => void refresh(), REFRESH_MS);
  const tick = setInterval(draw, 1000);
  return {
    element: card('Timers', status, list),
    refresh: () => void refresh(),
    dispose() {
      clearInterval(poll);
      clearInterval(tick);
    },
  };
}
