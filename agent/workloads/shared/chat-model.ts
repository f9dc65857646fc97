// The workloads' port to a language model: chat messages (plus optional images and audio) in, a pulled stream
// of text out, with the numbers the per-turn metrics need. The runtime implements it over a slot
// (agent/workloads/slots/runtime-chat-model.ts), so voice, vision and the OpenAI API never see which engine host, backend
// or model version serves them.
import type { ChatMessage, ImageInput } from '../../../engine/index.js';
import type { KvReuseOutcome } from '../../telemetry/runtime-stats.js';

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
  /** `backend-lost`: the engine host died mid-answer (driver reset); the text so far is all there is. */
  finishReason: 'stop' | 'length' | 'aborted' | 'backend-lost';
  /** Why the answer ended early (`backend-lost`: which host died and how). */
  detail?: string;
  promptTokens: number;
  generatedTokens: number;
  prefillMs: number;
  decodeMs: number;
  /** What the engine did with the KV of the conversation's earlier turns (hit / partial / miss and why). */
  reuse?: KvReuseOutcome;
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
