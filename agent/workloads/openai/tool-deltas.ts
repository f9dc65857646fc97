// The calls of a streamed answer as OpenAI's `delta.tool_calls`: per call its `index`, `id`, `type` and
// `function.name` once, then `function.arguments` in pieces. The model's stream may complete a call before the
// response's headers went out (an answer that is only a call), so deltas wait here until the stream is open.
// `parallel_tool_calls: false` keeps the first call only.
import type { ChatResult, ToolCallDelta } from '../shared/chat-model.js';

export interface OpenAiToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export function openAiToolDelta(d: ToolCallDelta): OpenAiToolCallDelta {
  return d.kind === 'start'
    ? { index: d.index, id: d.id, type: 'function', function: { name: d.name, arguments: '' } }
    : { index: d.index, function: { arguments: d.text } };
}

export class ToolDeltaSink {
  readonly #parallel: boolean;
  #pending: ToolCallDelta[] = [];
  #write: ((d: OpenAiToolCallDelta) => void) | undefined;

  constructor(parallel: boolean) {
    this.#parallel = parallel;
  }

  /** For ChatRequest.onToolCallDelta. */
  readonly push = (d: ToolCallDelta): void => {
    if (!this.#parallel && d.index > 0) return;
    if (this.#write) this.#write(openAiToolDelta(d));
    else this.#pending.push(d);
  };

  /** The stream is open: what waited goes out, and the rest as it comes. */
  open(write: (d: OpenAiToolCallDelta) => void): void {
    this.#write = write;
    const pending = this.#pending;
    this.#pending = [];
    for (const d of pending) write(openAiToolDelta(d));
  }
}

/** The calls of a whole answer as `message.tool_calls` (arguments as a JSON string, as OpenAI sends them). */
export function openAiToolCalls(r: ChatResult, parallel: boolean) {
  const calls = parallel ? (r.toolCalls ?? []) : (r.toolCalls ?? []).slice(0, 1);
  return calls.map((c) => ({
    id: c.id,
    type: 'function' as const,
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
  }));
}
