import type { AudioInput, ChatMessage, ImageInput, Tensor, TensorData } from '../../../engine/index.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import type { MnnConfig, ModelKind } from '../../plan/types.js';
import type { KvReuseOutcome } from '../../telemetry/runtime-stats.js';
import type { EngineLoadTiming } from './load-split.js';

// The runtime's view of an engine host: a child process owning one loaded model. engine/ implements it
// (EngineHostClient); the adapter lives at the composition root, so the runtime is tested without MNN.

/** Everything needed to start one engine host and load one model into it. */
export interface InstanceSpec {
  /** Candidate key from the planner: `model@version/variant|config`. */
  key: string;
  modelId: string;
  version: string;
  variantId: string;
  /** What the catalog says the model is; `vad` loads as a graph (MNN's Express::Module: Silero), everything else as an LLM. */
  kind?: ModelKind;
  configPath: string;
  /** The variant's own MNN keys over config.json; the placement's `config` wins over them. */
  configOverrides?: Record<string, unknown>;
  config: MnnConfig;
  /** The planner's estimate; used to decide blue/green vs stop-then-load. */
  memoryBytes: number;
  /** Conversations whose KV a text LLM keeps at once, and the bytes the extra ones may hold (in memoryBytes). */
  conversations?: { max: number; budgetBytes: number; kvBytesPerToken?: number };
}

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export type ChatTurn = ChatMessage;

export interface GenerateRequest {
  /** Prompt text (wrapped in the model's chat template), or the whole conversation. */
  prompt: string | ChatMessage[];
  /** false: `prompt` is already the model's whole input (rendered on the agent's side, e.g. with tools, which
   *  MNN's own template rendering cannot pass); MNN's chat template is not applied again. Default: the model's
   *  config (`use_template`). */
  applyTemplate?: boolean;
  /** With `applyTemplate: false`: `prompt` holds each image's and audio's placeholder (the engine's
   *  mediaPlaceholder) where the media belongs, since the engine cannot place them in a prompt it did not render. */
  mediaPlaced?: boolean;
  maxNewTokens?: number;
  /** Image files, or decoded RGB bytes (row-major HWC, 3 channels), for a VLM. */
  images?: ImageInput[];
  /** WAV files, or mono float PCM (16 kHz unless sampleRate says otherwise), for an omni model. */
  audios?: AudioInput[];
}

export interface SpeakRequest {
  text: string;
}

export interface SpeechOut {
  samples: Float32Array;
  sampleRate: number;
}

/** One input of a graph model (Silero VAD): a typed array with its shape. */
export type TensorIn = Tensor;

export interface TensorOut {
  name: string;
  data: TensorData;
  shape: number[];
}

export interface GenerateStats {
  promptTokens: number;
  decodeTokens: number;
  prefillMs: number;
  decodeMs: number;
  /** What the generation did with the KV its host held (absent from hosts that do not report it). */
  reuse?: KvReuseOutcome;
}

export type GenerateEvent =
  | { type: 'text'; text: string }
  /** `stop`: the model ended its answer; `length`: maxNewTokens ran out; `backend-lost`: the host serving it died
   *  after tokens were streamed (the slot fell back; `detail` says why). A cancelled run throws instead. */
  | { type: 'done'; stats: GenerateStats; finishReason: 'stop' | 'length' | 'backend-lost'; detail?: string };

/** `cold`: a GPU backend compiled its kernels (no cache); `warm`: its kernel cache was used; `none`: the backend
 *  has no kernel cache (CPU, graph models). */
export interface LoadReport {
  cache: 'cold' | 'warm' | 'none';
  /** The engine's own split of the load (reading the weights, MNN's load), when it reports one. */
  engine?: EngineLoadTiming;
}

/** How long an instance's model took to load, and with which kernel cache state. */
export interface InstanceLoad {
  ms: number;
  cache: LoadReport['cache'];
}

export interface HostMemory {
  rssBytes: number;
  peakRssBytes: number;
  /** Private anonymous memory (RssAnon): what leaving gives back. File-backed pages (the engine library,
   *  mmapped weights) stay in the page cache, which MemAvailable already counts. */
  anonBytes?: number;
}

export interface EngineHost {
  readonly pid: number;
  /** Settles once when the process exits, for whatever reason. */
  readonly exited: Promise<HostExit>;
  /** Resolves with whether a GPU kernel cache was there to use. */
  load(spec: InstanceSpec, signal?: AbortSignal): Promise<LoadReport>;
  /** Tokens as they come; aborting the signal cancels between steps. Throws EngineFailure. */
  generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent>;
  /** Speech from the loaded model's talker (24 kHz mono float PCM), chunk by chunk. Throws EngineFailure. */
  speak(request: SpeakRequest, signal?: AbortSignal): AsyncIterable<SpeechOut>;
  /** One run of a graph model (spec.kind `vad`). Throws EngineFailure. */
  forward(inputs: TensorIn[], signal?: AbortSignal): Promise<TensorOut[]>;
  memory(): Promise<HostMemory>;
  /**
   * Drops the KV of every conversation but the one in the instance's own context (memory is short: snapshots go
   * before any model is unloaded); resolves with the bytes they were counted at. Absent: nothing to drop.
   */
  dropSnapshots?(): Promise<number>;
  unload(): Promise<void>;
  /** Ask the process to exit, kill it after a grace period; resolves with how it exited. */
  stop(): Promise<HostExit>;
}

export interface EngineHostFactory {
  /** Version of the engine the hosts run; part of every measurement key. */
  readonly engineVersion: string;
  /** Set when no host can run here (MNN missing): the one sentence every workload shows. */
  readonly unavailableReason?: string;
  start(options: { label: string; cpus: number[] }, signal?: AbortSignal): Promise<EngineHost>;
}

/**
 * Why an engine call failed, as far as the runtime cares:
 * - crash: the host process died (signal, OOM kill, native fault);
 * - load: the model did not load with this config (missing file, backend cannot create);
 * - backend: a running model hit a backend fault (OpenCL / QNN driver error) — the placement is suspect;
 * - cancelled: the caller or a drain deadline aborted it;
 * - request: this request was bad (prompt too long); nothing wrong with the placement.
 */
export type EngineFailureKind = 'crash' | 'load' | 'backend' | 'cancelled' | 'request';

export class EngineFailure extends MnnEdgeError {
  readonly kind: EngineFailureKind;
  constructor(kind: EngineFailureKind, message: string, options?: { cause?: unknown }) {
    super(`E${kind.toUpperCase()}`, message, { kind }, options);
    this.name = 'EngineFailure';
    this.kind = kind;
  }
}

/** Failures that say the placement itself is bad, so the slot should move down its fallback chain. */
export function impliesFallback(err: unknown): boolean {
  return (
    err instanceof EngineFailure && (err.kind === 'crash' || err.kind === 'load' || err.kind === 'backend')
  );
}

export function describeExit(exit: HostExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}
