// The workloads' port to a loaded language model: chat messages (plus optional images and audio) in, a pulled
// stream of text out, with the numbers the per-turn metrics need. EngineChatModel adapts the engine's Llm;
// a runtime-slot adapter can implement the same interface, so voice, vision and the OpenAI API do not care
// whether the model runs in this process or in an engine host.
import type {
  ChatMessage,
  EngineAvailability,
  ImageInput,
  Llm,
  SpeechChunk,
} from '../../engine/src/index.js';
import { WorkloadError } from './errors.js';

export type { ChatMessage };

export interface ChatRequest {
  messages: ChatMessage[];
  /** Raw RGB frames or image file paths, attached to the last user message. */
  images?: ImageInput[];
  /** 16 kHz mono float PCM, attached to the last user message. */
  audio?: Float32Array;
  maxNewTokens?: number;
  signal?: AbortSignal;
}

export interface ChatResult {
  text: string;
  finishReason: 'stop' | 'length' | 'aborted';
  promptTokens: number;
  generatedTokens: number;
  prefillMs: number;
  decodeMs: number;
}

export interface ChatStream extends AsyncIterable<string> {
  /** Settles when the stream ends, also when it was broken off or aborted. */
  readonly result: Promise<ChatResult>;
}

export interface ModelCapabilities {
  vision: boolean;
  audio: boolean;
  talker: boolean;
}

export interface ChatModel {
  /** Shown in /v1/models and stored with turns. */
  readonly id: string;
  readonly capabilities: ModelCapabilities;
  generate(request: ChatRequest): ChatStream;
  /** Speech for models with a talker (Qwen2.5-Omni, Qwen3-TTS). */
  speak?(options: {
    text: string;
    signal?: AbortSignal;
  }): AsyncIterable<{ samples: Float32Array; sampleRate: number }>;
}

/** Wraps an engine Llm loaded in this process. */
export class EngineChatModel implements ChatModel {
  readonly id: string;
  readonly capabilities: ModelCapabilities;
  readonly #llm: Llm;

  constructor(id: string, llm: Llm) {
    this.id = id;
    this.#llm = llm;
    this.capabilities = { ...llm.capabilities };
  }

  generate(request: ChatRequest): ChatStream {
    const generation = this.#llm.generate(request.messages, {
      ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
      ...(request.images?.length ? { images: request.images } : {}),
      ...(request.audio ? { audios: [{ samples: request.audio, sampleRate: 16000 }] } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const result = generation.result.then(
      (r): ChatResult => ({
        text: r.text,
        finishReason: r.finishReason,
        promptTokens: r.stats.promptTokens,
        generatedTokens: r.stats.generatedTokens,
        prefillMs: r.stats.prefillUs / 1000,
        decodeMs: r.stats.decodeUs / 1000,
      }),
    );
    result.catch(() => {});
    return { result, [Symbol.asyncIterator]: () => generation[Symbol.asyncIterator]() };
  }

  speak(options: { text: string; signal?: AbortSignal }): AsyncIterable<SpeechChunk> {
    return this.#llm.speak({ text: options.text, ...(options.signal ? { signal: options.signal } : {}) });
  }
}

/** The one refusal every workload gives when the engine is missing, so the dashboard can show it as is. */
export function requireEngine(availability: EngineAvailability, what: string): void {
  if (!availability.available) {
    throw new WorkloadError(
      'ENOENGINE',
      `MNN engine not available: ${availability.reason} (${what} needs it)`,
      {
        reason: availability.reason,
      },
    );
  }
}
