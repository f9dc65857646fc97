// The engine host protocol: typed messages over Node's IPC channel (advanced serialization, so typed arrays
// cross intact). stdout is never a protocol channel: MNN prints its diagnostics there, and the client turns
// those lines into log records.

import type { GraphLoadOptions, GraphOutput, Tensor } from '../graph.js';
import type {
  ConversationOptions,
  GenerateOptions,
  GenerationDelivery,
  GenerationResult,
  GenerationStats,
  LlmCapabilities,
  LlmConfigOverrides,
  LoadTiming,
  SpeakOptions,
} from '../llm.js';
import type { EngineAvailability } from '../loader.js';
import type { NativeGraphInfo } from '../native.js';
import type { ChatMessage } from '../prompt.js';
import type { WakeFiles, WakeLoadOptions } from '../wake.js';

/** SpeakOptions without the signal (cancelled with a `cancel` message, as a generation is). */
export type HostSpeakOptions = Omit<SpeakOptions, 'signal'>;

/** Graph (MNN Module) load options as they cross the channel (the addon is the host's own). */
export type HostGraphOptions = Omit<GraphLoadOptions, 'addon'>;

/** Wake pipeline load options as they cross the channel. */
export type HostWakeOptions = Omit<WakeLoadOptions, 'addon'>;

/** GenerateOptions without the signal, which stays on the client side and crosses as a `cancel` message. */
export type HostGenerateOptions = Omit<GenerateOptions, 'signal'>;

export type HostRequest =
  | {
      type: 'load';
      id: number;
      configPath: string;
      overrides: LlmConfigOverrides;
      conversations?: ConversationOptions;
    }
  | { type: 'load-graph'; id: number; path: string; options: HostGraphOptions }
  /** An openWakeWord pipeline (melspectrogram, embedding, keyword heads); `forward` then runs one 80 ms step. */
  | { type: 'load-wake'; id: number; files: WakeFiles; options: HostWakeOptions }
  | { type: 'generate'; id: number; input: string | ChatMessage[]; options: HostGenerateOptions }
  | { type: 'forward'; id: number; inputs: Tensor[] }
  | { type: 'speak'; id: number; options: HostSpeakOptions }
  /** Probes MNN (backends, CPU features) without loading a model; answers even when the addon is missing. */
  | { type: 'runtime-info'; id: number }
  | { type: 'cancel'; id: number; target: number }
  | { type: 'stats'; id: number }
  | { type: 'reset'; id: number }
  /** Drops the KV of every conversation but the instance's own context; answers the bytes they held. */
  | { type: 'drop-snapshots'; id: number }
  | { type: 'unload'; id: number }
  | { type: 'exit'; id: number };

export interface LoadedModel {
  configPath: string;
  timing: LoadTiming;
  capabilities: LlmCapabilities;
  config: Record<string, unknown>;
}

export interface LoadedGraph {
  path: string;
  info: NativeGraphInfo;
}

export interface LoadedWake {
  keywords: string[];
}

export interface WireError {
  code: string;
  message: string;
}

export type HostResponse =
  | { type: 'ready'; pid: number }
  | { type: 'result'; id: number; value: HostResultValue }
  | { type: 'error'; id: number; error: WireError }
  /** Every piece the host's decode thread had ready at once; sentUs (CLOCK_MONOTONIC) times the channel. */
  | { type: 'pieces'; id: number; pieces: string[]; sentUs: number }
  | { type: 'done'; id: number; result: GenerationResult; delivery: GenerationDelivery }
  /** A talker's PCM chunk of a `speak` request; `spoken` ends it. */
  | { type: 'audio'; id: number; samples: Float32Array; sampleRate: number; last: boolean }
  | { type: 'spoken'; id: number };

export type HostResultValue =
  | LoadedModel
  | LoadedGraph
  | LoadedWake
  | GraphOutput[]
  | EngineAvailability
  | GenerationStats
  | number
  | null
  | undefined;

export function isHostRequest(v: unknown): v is HostRequest {
  if (v === null || typeof v !== 'object') return false;
  const m = v as { type?: unknown; id?: unknown };
  return typeof m.type === 'string' && typeof m.id === 'number';
}

export function isHostResponse(v: unknown): v is HostResponse {
  if (v === null || typeof v !== 'object') return false;
  return typeof (v as { type?: unknown }).type === 'string';
}
