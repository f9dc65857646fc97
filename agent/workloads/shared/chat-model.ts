// The workloads' port to a language model: chat messages (plus optional images and audio) in, a pulled stream
// of text out, with the numbers the per-turn metrics need. The runtime implements it over a slot
// (agent/workloads/slots/runtime-chat-model.ts), so voice, vision and the OpenAI API never see which engine host, backend
// or model version serves them.
import type { ChatMessage as EngineMessage, ImageInput } from '../../../engine/index.js';
import type { KvReuseOutcome } from '../../telemetry/runtime-stats.js';

/** A function the model may call: OpenAI's `tools[].function` (parameters is a JSON Schema object). */
export interface ToolFunction {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

export interface ToolSpec {
  type: 'function';
  function: ToolFunction;
}

/** A call the model made, parsed from its own output; `arguments` is always a JSON object. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** `none`: tools are shown but must not be called; `required`: some call must come; a name: that one. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** What the OpenAI stream needs to send a call in pieces: the head once, then argument text as it comes. */
export type ToolCallDelta =
  | { index: number; kind: 'start'; id: string; name: string }
  | { index: number; kind: 'arguments'; text: string };

/**
 * A chat message. Assistant messages may carry the calls they made, `tool` messages the result of one (the id
 * and name are optional: Home Assistant's Ollama integration sends tool results without either).
 */
export interface ChatMessage extends EngineMessage {
  toolCalls?: ToolCall[];
  toolCallId?: string;
  toolName?: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  /** Raw RGB frames or image file paths, attached to the last user message. */
  images?: ImageInput[];
  /** 16 kHz mono float PCM, attached to the last user message. */
  audio?: Float32Array;
  maxNewTokens?: number;
  signal?: AbortSignal;
  /** Functions the model may call, rendered through the model's own chat template. */
  tools?: ToolSpec[];
  toolChoice?: ToolChoice;
  /** Called as a call's head and argument text are parsed (streaming APIs); the result lists the whole calls. */
  onToolCallDelta?: (delta: ToolCallDelta) => void;
}

export interface ChatResult {
  text: string;
  /** `backend-lost`: the engine host died mid-answer (driver reset); the text so far is all there is. */
  finishReason: 'stop' | 'length' | 'aborted' | 'backend-lost' | 'tool_calls';
  /** Why the answer ended early (`backend-lost`: which host died and how). */
  detail?: string;
  promptTokens: number;
  generatedTokens: number;
  prefillMs: number;
  decodeMs: number;
  /** What the engine did with the KV of the conversation's earlier turns (hit / partial / miss and why). */
  reuse?: KvReuseOutcome;
  /** The calls parsed from the answer (finishReason `tool_calls`); absent or empty when there were none. */
  toolCalls?: ToolCall[];
  /** Tool markup that could not be parsed: kept in `text`, each with the reason. */
  toolParseErrors?: string[];
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
  /**
   * Whether the model serving now can be offered tools (its chat template shows them). False: a request with
   * tools would be refused, so the acting assistant answers in words. Absent: unknown, try.
   */
  supportsTools?(): boolean;
  /** Speech for models with a talker (Qwen2.5-Omni, Qwen3-TTS). */
  speak?(options: {
    text: string;
    signal?: AbortSignal;
  }): AsyncIterable<{ samples: Float32Array; sampleRate: number }>;
}
