import type { AssistantToolCallView } from '../../../agent/dashboard-api/wire.js';
import { card, h } from '../ui/dom.js';
import { toolCallView } from '../ui/tool-call.js';
import type { TurnMetricsView } from '../voice/protocol.js';
import type { Limits } from './workloads.js';

// The voice page's parts that only show things: its controls, the conversation one turn per row, and the
// per-turn latency table. voice.ts wires them to the microphone and the socket.

interface TurnView {
  row: HTMLElement;
  you: HTMLElement;
  reply: HTMLElement;
}

function ms(v: number | undefined): string {
  return v === undefined ? '—' : `${Math.round(v)} ms`;
}

/** "hit 412/430": prompt tokens whose KV was kept of the prompt's, and the engine's verdict. */
function kvCell(m: TurnMetricsView): string {
  if (m.kvReuse === undefined) return '—';
  const of = m.promptTokens !== undefined ? `/${m.promptTokens}` : '';
  return `${m.kvReuse} ${m.kvReusedTokens ?? 0}${of}`;
}

/** The voice page's controls and output areas, created once per page. */
export function voiceControls() {
  const modeSelect = h(
    'select',
    { 'aria-label': 'Mode', 'data-testid': 'voice-mode' },
    h('option', { value: 'push-to-talk' }, 'Push to talk'),
    h('option', { value: 'vad' }, 'Hands-free'),
  );
  const startBtn = h('button', { type: 'button', 'data-testid': 'voice-start' }, 'Start');
  const pttBtn = h(
    'button',
    { type: 'button', class: 'ptt', disabled: true, 'data-testid': 'voice-ptt' },
    'Hold to talk',
  );
  const meter = h('meter', { min: 0, max: 1, value: 0, 'aria-label': 'Microphone level' });
  const sayInput = h('input', {
    type: 'text',
    maxlength: 2000,
    placeholder: 'Text for the device to say',
    'aria-label': 'Text to say',
    disabled: true,
    'data-testid': 'voice-say-text',
  });
  const sayBtn = h('button', { type: 'submit', disabled: true, 'data-testid': 'voice-say' }, 'Say');
  const sayForm = h('form', { class: 'toolbar' }, sayInput, sayBtn);
  const state = h('p', { class: 'sub', 'data-testid': 'voice-state' }, 'Not connected.');
  const problem = h('div', {});
  const conversation = h('div', { class: 'conversation', 'data-testid': 'conversation' });
  const playback = h('p', { class: 'sub', 'data-testid': 'playback' }, 'No reply audio yet.');
  const latencyBody = h('tbody', {});
  const latencies = h(
    'table',
    { 'data-testid': 'latencies' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...[
          'Turn',
          'Speech',
          'VAD end',
          'ASR',
          'LLM TTFT',
          '1st sentence',
          '1st TTS',
          'Hand-overs',
          'First audio',
          'KV reuse',
          'tok/s',
          'Status',
        ].map((t) => h('th', {}, t)),
      ),
    ),
    latencyBody,
  );

  return {
    modeSelect,
    startBtn,
    pttBtn,
    meter,
    sayInput,
    sayBtn,
    sayForm,
    state,
    problem,
    conversation,
    playback,
    latencyBody,
    latencies,
  };
}

export type VoiceControls = ReturnType<typeof voiceControls>;

/** The conversation as it comes back: a row per turn (what you said, the reply) and the turn's latencies. */
export function conversationView(ui: VoiceControls) {
  const { conversation, latencyBody } = ui;
  const turns = new Map<number, TurnView>();
  const turnView = (turn: number): TurnView => {
    let t = turns.get(turn);
    if (!t) {
      const you = h('p', { class: 'you' });
      const reply = h('p', { class: 'reply', 'data-testid': 'reply' });
      t = { row: h('div', { class: 'turn', 'data-turn': turn }, you, reply), you, reply };
      turns.set(turn, t);
      conversation.append(t.row);
    }
    return t;
  };
  const addLatency = (turn: number, status: string, m: TurnMetricsView) => {
    latencyBody.append(
      h(
        'tr',
        {},
        ...[
          String(turn),
          ms(m.speechMs),
          ms(m.vadEndMs),
          ms(m.asrMs),
          ms(m.llmTtftMs),
          ms(m.sentenceMs),
          ms(m.ttsFirstMs),
          ms(m.handoverMs),
          ms(m.ttfaMs),
          kvCell(m),
          m.tokensPerSec?.toFixed(1) ?? '—',
          status,
        ].map((c) => h('td', {}, c)),
      ),
    );
  };

  const clear = () => {
    turns.clear();
    conversation.replaceChildren();
    latencyBody.replaceChildren();
  };
  return { turnView, addLatency, clear };
}

export type ConversationView = ReturnType<typeof conversationView>;

/** A turn's tool calls under its reply, each collapsed to one line that opens to its arguments and result. */
export function toolCallsView(calls: readonly AssistantToolCallView[]): HTMLElement | null {
  if (calls.length === 0) return null;
  return h(
    'div',
    { class: 'tool-calls', 'data-testid': 'turn-tool-calls' },
    ...calls.map((c) =>
      toolCallView({
        name: c.name,
        arguments: c.arguments,
        result: { ok: c.ok, content: c.content, ms: c.ms },
      }),
    ),
  );
}

/** The agent's live sessions, shared by dashboard sockets and Wyoming flows: how many, and who holds them. */
export function liveSessions(limits: Limits): HTMLElement {
  const rows = limits.sessionHolders.map((s) =>
    h(
      'tr',
      {},
      h('td', {}, s.kind),
      h('td', {}, s.who ?? '—'),
      h('td', {}, new Date(s.sinceMs).toLocaleTimeString()),
    ),
  );
  return card(
    'Live sessions',
    h(
      'p',
      { class: 'sub', 'data-testid': 'live-sessions' },
      `${limits.activeSessions} of ${limits.maxSessions} in use (http.maxSessions), as this page loaded`,
    ),
    rows.length > 0
      ? h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'held by'), h('th', {}, 'client'), h('th', {}, 'since'))),
          h('tbody', {}, ...rows),
        )
      : h('p', { class: 'sub' }, 'None held.'),
  );
}
