// A ChatModel served by the runtime's engine host for a slot (process isolation, placement, fallback) instead of
// an Llm in the agent's own process. Coded against a port of its own: the runtime's `stream(slot, request,
// signal)` takes this request shape once its GenerateRequest carries chat messages and media (see the report /
// docs/WORKLOADS.md); the engine host protocol already does.
import type { AudioInput, ChatMessage, ImageInput } from '../../engine/src/index.js';
import type { SlotName } from '../plan/types.js';
import type { ChatModel, ChatRequest, ChatResult, ChatStream, ModelCapabilities } from './chat-model.js';

export interface SlotGenerateRequest {
  prompt: string | ChatMessage[];
  maxNewTokens?: number;
  images?: ImageInput[];
  audios?: AudioInput[];
}

export type SlotGenerateEvent =
  | { type: 'text'; text: string }
  | {
      type: 'done';
      stats: { promptTokens: number; decodeTokens: number; prefillMs: number; decodeMs: number };
    };

export interface SlotGenerator {
  stream(
    slot: SlotName,
    request: SlotGenerateRequest,
    signal?: AbortSignal,
  ): AsyncIterable<SlotGenerateEvent>;
}

export class RuntimeChatModel implements ChatModel {
  readonly id: string;
  readonly capabilities: ModelCapabilities;
  readonly #slot: SlotName;
  readonly #runtime: SlotGenerator;

  constructor(slot: SlotName, runtime: SlotGenerator, capabilities: ModelCapabilities, id: string = slot) {
    this.id = id;
    this.#slot = slot;
    this.#runtime = runtime;
    this.capabilities = capabilities;
  }

  generate(request: ChatRequest): ChatStream {
    const events = this.#runtime.stream(
      this.#slot,
      {
        prompt: request.messages,
        ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
        ...(request.images?.length ? { images: request.images } : {}),
        ...(request.audio ? { audios: [{ samples: request.audio, sampleRate: 16000 }] } : {}),
      },
      request.signal,
    );
    const maxNewTokens = request.maxNewTokens;
    const signal = request.signal;
    let settle!: (r: ChatResult) => void;
    let fail!: (e: unknown) => void;
    const result = new Promise<ChatResult>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    result.catch(() => {});
    async function* pieces(): AsyncGenerator<string> {
      let text = '';
      let done: Extract<SlotGenerateEvent, { type: 'done' }>['stats'] | undefined;
      try {
        for await (const ev of events) {
          if (ev.type === 'text') {
            text += ev.text;
            yield ev.text;
          } else done = ev.stats;
        }
      } catch (err) {
        fail(err);
        throw err;
      } finally {
        // Broken off by the consumer (or never finished): report what came out as aborted.
        settle({
          text,
          finishReason:
            done === undefined || signal?.aborted
              ? 'aborted'
              : maxNewTokens !== undefined && done.decodeTokens >= maxNewTokens
                ? 'length'
                : 'stop',
          promptTokens: done?.promptTokens ?? 0,
          generatedTokens: done?.decodeTokens ?? 0,
          prefillMs: done?.prefillMs ?? 0,
          decodeMs: done?.decodeMs ?? 0,
        });
      }
    }
    const gen = pieces();
    return { result, [Symbol.asyncIterator]: () => gen };
  }
}
