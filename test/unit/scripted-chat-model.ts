// ChatModel doubles. ScriptedChatModel, for the acting assistant's tests: each generate() takes the next step of a
// script, which sees the request (so a step can answer differently when a tool result is in the prompt) and gives
// text pieces and, optionally, tool calls; it honours the abort signal as the runtime's model does.
// endingModel, for the API routes' tests: one answer whose ending (tool calls, a lost host, a throw) is the subject.
import type {
  ChatModel,
  ChatRequest,
  ChatResult,
  ChatStream,
  ToolCall,
} from '../../agent/workloads/shared/chat-model.js';

export interface ScriptStep {
  pieces?: string[];
  toolCalls?: ToolCall[];
  /** Never ends by itself: only the abort signal stops it. */
  hang?: boolean;
}

export type Script = Array<ScriptStep | ((request: ChatRequest) => ScriptStep)>;

export class ScriptedChatModel implements ChatModel {
  readonly id = 'scripted';
  readonly capabilities = { vision: true, audio: true, talker: false };
  readonly requests: ChatRequest[] = [];
  #step = 0;

  constructor(readonly script: Script) {}

  generate(request: ChatRequest): ChatStream {
    // The messages as they were then: the loop goes on appending to its own array.
    this.requests.push({ ...request, messages: request.messages.map((m) => ({ ...m })) });
    const entry = this.script[Math.min(this.#step++, this.script.length - 1)]!;
    const step = typeof entry === 'function' ? entry(request) : entry;
    let settle!: (r: ChatResult) => void;
    const result = new Promise<ChatResult>((r) => {
      settle = r;
    });
    const signal = request.signal;
    async function* run() {
      let text = '';
      try {
        for (const p of step.pieces ?? []) {
          await new Promise((r) => setImmediate(r));
          signal?.throwIfAborted();
          text += p;
          yield p;
        }
        if (step.hang)
          await new Promise((_, reject) => {
            if (signal?.aborted) reject(signal.reason);
            signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
          });
      } finally {
        const calls = step.toolCalls ?? [];
        settle({
          text,
          finishReason: signal?.aborted ? 'aborted' : calls.length > 0 ? 'tool_calls' : 'stop',
          promptTokens: 10,
          generatedTokens: (step.pieces ?? []).length,
          prefillMs: 1,
          decodeMs: 2,
          ...(calls.length > 0 && !signal?.aborted ? { toolCalls: calls } : {}),
        });
      }
    }
    const gen = run();
    return { result, [Symbol.asyncIterator]: () => gen };
  }
}

/** How endingModel's answer ends: the result's fields over a plain stop, or an error thrown after the pieces. */
export type Ending = Partial<ChatResult> & { throwAfter?: Error };

/** A model (tiny-llm) that streams its pieces, then ends as told (or throws); it records the requests it got. */
export function endingModel(pieces: string[], ending: Ending, seen: ChatRequest[] = []): ChatModel {
  return {
    id: 'tiny-llm',
    capabilities: { vision: false, audio: false, talker: false },
    generate(request) {
      seen.push(request);
      let settle!: (r: ChatResult) => void;
      const result = new Promise<ChatResult>((r) => {
        settle = r;
      });
      return {
        result,
        async *[Symbol.asyncIterator]() {
          for (const p of pieces) yield p;
          if (ending.throwAfter) throw ending.throwAfter;
          settle({
            text: pieces.join(''),
            finishReason: 'stop',
            promptTokens: 3,
            generatedTokens: pieces.length,
            prefillMs: 1,
            decodeMs: 1,
            ...ending,
          });
        },
      };
    },
  };
}
