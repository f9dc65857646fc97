// The typed mirror of engine/native: exactly what the addon exports, nothing more. Public classes wrap these
// handles; nothing outside engine/src should touch them.

export type BackendName =
  | 'cpu'
  | 'metal'
  | 'cuda'
  | 'opencl'
  | 'opengl'
  | 'vulkan'
  | 'npu'
  | 'hexagon'
  | 'musa';

export interface BackendInfo {
  name: BackendName;
  forwardType: number;
  /** A runtime creator for this backend is registered in the MNN build. */
  compiledIn: boolean;
  /** A runtime of this type could be created on this device (driver present). */
  usable: boolean;
}

/** One link of a backend's evidence chain as the engine checked it (see engine/native/backend_probe.h). */
export interface BackendProbeStep {
  step: 'compiled-in' | 'loader' | 'device-kind' | 'init-probe';
  status: 'ok' | 'fail' | 'skip';
  detail: string;
}

export interface BackendProbeResult {
  name: BackendName;
  /** A runtime creator is registered, whether or not a device answers. */
  compiledIn: boolean;
  deviceKind: 'gpu' | 'software' | 'unknown';
  /** Time to create the runtime and run the tiny graph; 0 when it did not get that far. */
  initMs: number;
  steps: BackendProbeStep[];
}

export interface RuntimeInfo {
  /** MNN::getVersion() of the loaded library. */
  mnnVersion: string;
  /** MNN_VERSION of the headers the addon was compiled against. */
  headerVersion: string;
  backends: BackendInfo[];
  /** What MNN's CPU runtime reports for the kernels it selected. */
  cpu: { fp16: boolean; dotProduct: boolean };
  /** Optional parts of the MNN install the addon was built with. */
  features: { audio: boolean; imageCodecs: boolean };
  /** The evidence chain of each GPU backend compiled in (Vulkan, OpenCL), from an engine host. */
  probes?: BackendProbeResult[];
}

export interface NativeImagePart {
  key: string;
  path?: string;
  data?: Uint8Array;
  width?: number;
  height?: number;
}

export interface NativeAudioPart {
  key: string;
  path?: string;
  samples?: Float32Array;
  sampleRate?: number;
}

export interface NativePrefillRequest {
  text?: string;
  messages?: Array<[string, string]>;
  applyTemplate: boolean;
  maxNewTokens: number;
  images: NativeImagePart[];
  audios: NativeAudioPart[];
  /** Keep the KV of the prompt's common token prefix with what the model holds (default true). */
  reuse?: boolean;
  /** The model uses multimodal RoPE: no prefix is kept once media are in the prompt. */
  mrope?: boolean;
  /** The model's context in tokens; a prompt that fills it is refused with ECONTEXT (0: unchecked). */
  contextTokens?: number;
  /** MNN's prefill chunk in tokens (config `chunk`, the largest of `chunk_limits`); kept KV ends on a multiple. */
  prefillChunk?: number;
}

export type FinishReason = 'stop' | 'length' | 'aborted';

/** What the decode thread hands over in one go: every token decoded since the last batch. */
export interface NativeTokenBatch {
  /** One entry per decoded token ('' while a multi-byte character is incomplete), maybe a flushed tail last. */
  pieces: string[];
  /** Decoded tokens among the pieces (a tail flushed at the end is not one). */
  tokens: number;
  /** Sum, over the batch's tokens, of the CLOCK_MONOTONIC microsecond each was decoded at. */
  producedUsSum: number;
  /** Time the decode thread has waited for acknowledgements so far in this generation (absent in older builds). */
  creditWaitUs?: number;
  firstUs: number;
  lastUs: number;
  done: boolean;
  reason: FinishReason | null;
  /** The generation failed (the native Error, with its code). */
  error: Error | null;
}

/**
 * What a generation did with the KV cache the model held: `hit` kept all of it (the prompt extends what the model
 * holds), `partial` a prefix, `miss` none. `reason` says why not all of it: `cold` (nothing held: a new, restarted
 * or failed-over host, or a new conversation context), `disabled` (the request or config turned reuse off),
 * `diverged` (the prompt differs from the held tokens after `reusedTokens`: an edited or another conversation, a
 * changed system prompt), `media` (a prefix is kept only up to the first image/audio part), `regenerate` (the
 * whole prompt was held: its last tokens are prefilled again for their logits), `evicted` (the prompt continues a
 * conversation whose context was given up: least recently used, over the byte budget, or memory was short),
 * `chunk` (all that was held lies before the first boundary of MNN's prefill chunk, see `chunkTokens`).
 */
export interface PrefixReuse {
  outcome: 'hit' | 'partial' | 'miss';
  reason: 'cold' | 'disabled' | 'diverged' | 'media' | 'regenerate' | 'evicted' | 'chunk' | null;
  reusedTokens: number;
  prefilledTokens: number;
  /** Tokens whose KV the model held before this generation (in the context it ran in). */
  heldTokens: number;
  /**
   * MNN's prefill chunk, where one is set (config `chunk`): the kept KV ends on a multiple of it, so that a reused
   * prefill computes the same chunks as a whole one (exact on MNN's Arm82 fp16 backend with quantized weights,
   * whose results depend on the tokens prefilled together). null: none; absent from older builds.
   */
  chunkTokens?: number | null;
  /** The conversation contexts of the instance (absent from addons built before them). */
  contexts?: ConversationContexts;
}

/**
 * An instance's conversation contexts after a generation (engine/native/kv_contexts.h). Each context keeps the KV
 * of one conversation; extra ones share the instance's weights (MNN's Llm::create_lora on the same graph).
 */
export interface ConversationContexts {
  /** The context this generation ran in (0: the instance's own). */
  context: number;
  /**
   * How it was chosen: `own` (it continues the conversation that context holds), `new` (a context of its own was
   * made), `lru` (it took over the least recently used context), `only` (one context: snapshots off).
   */
  route: 'own' | 'new' | 'lru' | 'only';
  count: number;
  max: number;
  /** What the extra contexts hold together (made + KV), against `budgetBytes`. */
  snapshotBytes: number;
  budgetBytes: number;
  /** Conversations given up so far. */
  evictions: number;
  /** Making the new context took this long (0 unless route is `new`); it is part of this generation's TTFT. */
  createUs: number;
  /** Why a new context could not be made (then it took over the least recently used one). */
  error: string | null;
}

/** Limits of an instance's conversation contexts (see ConversationOptions). */
export interface NativeConversationLimits {
  max: number;
  budgetBytes: number;
  kvBytesPerToken: number;
  /** The graph file as the config names it (relative to base_dir): extra contexts are made from it. */
  llmModel: string;
  /** Make the extra contexts now, as many as the count and budget allow. */
  prepare?: boolean;
}

/** What setConversations left: the contexts now made, how long making them ahead took, why one could not be. */
export interface PreparedContexts {
  contexts: number;
  prepareUs: number;
  error: string | null;
}

export interface NativeLlmStats {
  /** The whole prompt's tokens: those whose KV was kept plus those prefilled. */
  promptTokens: number;
  generatedTokens: number;
  historyTokens: number;
  prefillUs: number;
  decodeUs: number;
  sampleUs: number;
  visionUs: number;
  audioUs: number;
  ttfaUs: number;
  audioInputSeconds: number;
  finishReason: FinishReason | null;
  /** Absent from addons built before prefix reuse. */
  reuse?: PrefixReuse;
  /** The generated token ids, a final stop token included (absent from older addons). */
  outputIds?: Int32Array;
}

/** Where a load's time went: reading the weight files through the page cache, then MNN's own load. */
export interface NativeLoadTiming {
  readUs: number;
  readBytes: number;
  loadUs: number;
}

export interface NativeLlmHandle {
  configJson(): string;
  /** Reads `files` through the page cache, then runs MNN's load. */
  load(files?: string[]): Promise<NativeLoadTiming>;
  /**
   * Prefills and decodes on a native thread that runs at most `window` tokens ahead of ack(); onBatch gets the
   * tokens on the JS thread. Throws EBUSY while another call runs.
   */
  generate(
    request: NativePrefillRequest,
    window: number,
    onBatch: (batch: NativeTokenBatch) => void,
    holdUs?: number,
    cpus?: number[],
  ): void;
  ack(tokens: number): void;
  cancel(): void;
  stats(): NativeLlmStats;
  reset(): Promise<void>;
  eraseHistory(begin: number, end: number): Promise<void>;
  encode(text: string): Promise<Int32Array>;
  decode(ids: Int32Array): Promise<string>;
  dispose(): Promise<void>;
  speak(request: {
    /** tts: Qwen3-TTS generateTTS(text); last: an omni talker voices the last generation; text: it voices text. */
    mode: 'tts' | 'last' | 'text';
    text?: string;
    language?: string;
    maxNewTokens?: number;
    refAudio?: string;
  }): Promise<void>;
  nextSpeechChunk(): Promise<{ samples: Float32Array; last: boolean } | null>;
  /** Absent from addons built before conversation contexts. */
  setConversations?(limits: NativeConversationLimits): Promise<PreparedContexts>;
  /** Drops every extra conversation context; resolves with the bytes they were counted at. */
  dropSnapshots?(): Promise<number>;
}

export type TensorData = Float32Array | Int32Array | Uint8Array | Int8Array;
export type TensorType = 'float32' | 'int32' | 'uint8' | 'int8';

export interface NativeGraphLoadOptions {
  path: string;
  inputs: string[];
  outputs: string[];
  backend: string;
  threads: number;
  precision: string;
  memory: string;
  power: string;
}

export interface NativeTensorIn {
  data: TensorData;
  shape: number[];
}

export interface NativeTensorOut {
  name: string;
  data: TensorData;
  shape: number[];
  type: TensorType;
}

export interface NativeGraphInfo {
  inputs: Array<{ name: string; shape?: number[]; type?: string }>;
  outputs: string[];
}

export interface NativeGraphHandle {
  load(options: NativeGraphLoadOptions): Promise<void>;
  forward(inputs: NativeTensorIn[]): Promise<NativeTensorOut[]>;
  info(): NativeGraphInfo;
  dispose(): Promise<void>;
}

export interface EngineAddon {
  LlmHandle: new (configPath: string, overridesJson: string) => NativeLlmHandle;
  GraphHandle: new () => NativeGraphHandle;
  runtimeInfo(): RuntimeInfo;
  /** Throws (code EBACKEND) when `name` is unknown, not compiled in, or cannot start here. */
  checkBackend(name: string, purpose: string): void;
  /** Every step of the backend's chain: compiled in, loader, devices, a tiny graph on a fresh runtime. */
  probeBackend?(name: string): BackendProbeResult;
  /** Hands the allocator's free memory back to the system (glibc's malloc_trim); whether any was released.
   *  Absent in older builds. */
  trimHeap?(): boolean;
  /** Digest of the C++ sources it was built from (engine/scripts/native-sources.cmake); absent in older builds. */
  nativeSources?: string;
}
