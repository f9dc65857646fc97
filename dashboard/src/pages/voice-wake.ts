import { type Api, ApiError } from '../ui/api.js';
import { card, h, notice } from '../ui/dom.js';
import type { PageContext } from '../ui/page.js';
import { WakeChart } from '../ui/wake-chart.js';
import {
  parseWakeEvent,
  thresholdPatch,
  type WakeDetection,
  type WakeKeyword,
  type WakeStatus,
} from '../voice/wake-protocol.js';
import { clipsSection } from './voice-wake-clips.js';

// The Voice page's wake-word card: the live scores per keyword as a chart (threshold lines, detection marks),
// each keyword's threshold to change, and the last detections. A threshold is saved through the configuration
// (voice.wake.keywords.<name>.threshold, the same guarded PATCH the Settings page sends), so it is logged, kept
// across a restart, and applied to the running wake streams at once; the chart's line moves when the agent says
// the new rule is in force, not when the button is pressed.

interface SavedChange {
  revision: number;
  applied: string[];
  restartRequired: string[];
}

/** One key's change: made against the current revision, and once more if someone saved in between. */
async function patchConfig(api: Api, patch: Record<string, unknown>): Promise<SavedChange> {
  for (let attempt = 0; ; attempt++) {
    const { revision } = await api.get<{ revision: number }>('/api/config');
    try {
      return await api.patch<SavedChange>('/api/config', patch, revision);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409 && attempt === 0)) throw err;
    }
  }
}

function detectionRow(d: WakeDetection): HTMLElement {
  return h(
    'tr',
    {},
    h('td', {}, new Date(d.t).toLocaleTimeString()),
    h('td', {}, d.keyword),
    h('td', {}, d.score.toFixed(2)),
    h('td', {}, d.source),
  );
}

/** Threshold inputs per keyword; `show` refreshes them from the agent's rules except one being edited. */
function thresholdForm(api: Api, result: HTMLElement, problem: HTMLElement) {
  const form = h('div', { class: 'toolbar', 'data-testid': 'wake-keywords' });
  const inputs = new Map<string, HTMLInputElement>();
  const save = async (name: string, input: HTMLInputElement, button: HTMLButtonElement) => {
    problem.replaceChildren();
    const text = input.value.trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) {
      problem.replaceChildren(
        notice(
          'error',
          'Threshold not saved',
          `${name}: enter a number from 0.01 to 0.99`,
          'wake-threshold-error',
        ),
      );
      return;
    }
    button.disabled = true;
    try {
      const saved = await patchConfig(api, thresholdPatch(name, value));
      const when = saved.restartRequired.length > 0 ? 'in effect after a restart' : 'applied now';
      result.textContent = `Saved as revision ${saved.revision}: ${name} threshold ${value}, ${when}.`;
    } catch (err) {
      problem.replaceChildren(
        notice('error', 'Threshold not saved', (err as Error).message, 'wake-threshold-error'),
      );
    } finally {
      button.disabled = false;
    }
  };
  const show = (keywords: readonly WakeKeyword[]) => {
    for (const k of keywords) {
      let input = inputs.get(k.name);
      if (!input) {
        const field = h('input', {
          type: 'number',
          class: 'narrow',
          min: 0.01,
          max: 0.99,
          step: 0.01,
          'aria-label': `Threshold for ${k.name}`,
          'data-testid': `wake-threshold-${k.name}`,
        });
        const button = h(
          'button',
          { type: 'submit', 'data-testid': `wake-threshold-save-${k.name}` },
          'Save',
        );
        const row = h(
          'form',
          // The agent checks the value and says what is allowed (the schema's message), as the Settings page does.
          { class: 'toolbar', novalidate: true },
          h('label', {}, `${k.phrase ?? k.name} threshold `, field),
          button,
        );
        row.addEventListener('submit', (e) => {
          e.preventDefault();
          void save(k.name, field, button);
        });
        form.append(row);
        inputs.set(k.name, field);
        input = field;
      }
      if (document.activeElement !== input) input.value = String(k.threshold);
    }
  };
  return { form, show };
}

/** The card, wired to the agent; dispose() closes its socket. */
export async function wakeCard(ctx: PageContext): Promise<{ element: HTMLElement; dispose(): void }> {
  let status: WakeStatus;
  try {
    status = await ctx.api.get<WakeStatus>('/api/voice/wake');
  } catch (err) {
    status = { available: false, reason: (err as Error).message };
  }
  if (!status.available)
    return {
      element: card('Wake word', notice('info', 'No wake word', status.reason, 'wake-unavailable')),
      dispose() {},
    };

  const chart = new WakeChart();
  chart.emptyText =
    'No scores yet: the board scores audio while its own loop is gated (voice.wake.enabled) or a Wyoming satellite asks for detection.';
  const state = h('p', { class: 'sub', 'data-testid': 'wake-live-state' }, 'Connecting to the wake scores…');
  const result = h('p', { class: 'sub', 'data-testid': 'wake-threshold-result' });
  const problem = h('div', {});
  const { form, show } = thresholdForm(ctx.api, result, problem);
  const rows = h('tbody', {});
  const detections = h(
    'table',
    { 'data-testid': 'wake-detections' },
    h('thead', {}, h('tr', {}, ...['When', 'Keyword', 'Score', 'Heard by'].map((c) => h('th', {}, c)))),
    rows,
  );
  const keywords = (list: WakeKeyword[]) => {
    chart.setKeywords(list);
    show(list);
  };
  const detected = (list: readonly WakeDetection[]) => {
    chart.addDetections(list);
    for (const d of list) rows.prepend(detectionRow(d));
    while (rows.children.length > 20) rows.lastElementChild?.remove();
  };
  keywords(status.keywords);
  const clips = clipsSection(ctx.api);
  void clips.refresh();

  let closedByPage = false;
  let source = '';
  const ws = new WebSocket(ctx.api.wsUrl(status.livePath));
  ws.addEventListener('open', () => {
    state.textContent = 'Live.';
  });
  ws.addEventListener('message', (event) => {
    const msg = parseWakeEvent(String(event.data));
    if (msg?.type === 'hello') {
      keywords(msg.keywords);
      chart.addFrames(msg.frames);
      detected(msg.detections);
    } else if (msg?.type === 'frame') {
      chart.addFrames([msg]);
      if (msg.source !== source) {
        source = msg.source;
        state.textContent = `Live: scoring audio from ${source}.`;
      }
    } else if (msg?.type === 'detection') detected([msg]);
    else if (msg?.type === 'keywords') keywords(msg.keywords);
    else if (msg?.type === 'clips') void clips.refresh();
  });
  ws.addEventListener('close', (event) => {
    if (closedByPage) return;
    state.replaceChildren(
      notice(
        'warn',
        'Wake scores closed',
        event.reason || `The agent closed the stream (code ${event.code}). Reload to reconnect.`,
        'wake-closed',
      ),
    );
  });
  requestAnimationFrame(() => chart.draw());
  return {
    element: card(
      'Wake word',
      state,
      chart.element,
      form,
      result,
      problem,
      detections,
      h('h3', {}, 'Detection clips'),
      clips.element,
    ),
    dispose() {
      closedByPage = true;
      ws.close(1000, 'page closed');
    },
  };
}
