import { formatArguments, formatMs } from '../chat/transcript.js';
import { h } from './dom.js';

// One tool call as the Chat page and the Voice page's turn details show it: a one-line summary (which tool, how
// it went, how long) that opens to its arguments and its result, as the model sent and read them.

export interface ToolCallShown {
  name: string;
  arguments: Record<string, unknown>;
  /** Absent while the call runs. */
  result?: { ok: boolean; content: string; ms: number } | undefined;
}

function outcome(call: ToolCallShown): string {
  if (!call.result) return 'running…';
  return `${call.result.ok ? 'done' : 'failed'} in ${formatMs(call.result.ms)}`;
}

export function toolCallView(call: ToolCallShown): HTMLDetailsElement {
  const state = call.result ? (call.result.ok ? 'ok' : 'failed') : 'running';
  return h(
    'details',
    { class: `tool-call ${state}`, 'data-testid': 'tool-call', 'data-tool': call.name, 'data-state': state },
    h('summary', {}, 'Tool ', h('code', {}, call.name), ` · ${outcome(call)}`),
    h('p', { class: 'sub' }, 'Arguments'),
    h('pre', { 'data-testid': 'tool-arguments' }, formatArguments(call.arguments)),
    call.result ? h('p', { class: 'sub' }, call.result.ok ? 'Result' : 'Error') : null,
    call.result ? h('pre', { 'data-testid': 'tool-result' }, call.result.content) : null,
  );
}
