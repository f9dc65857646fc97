// The planner's vocabulary. These are the planner's own ports: the detect, models and bench modules are adapted
// to them at the composition root, so the planner stays pure and is tested with plain values.

export const SLOT_NAMES = [
  'voice.vad',
  'voice.wake',
  'voice.asr',
  'voice.llm',
  'voice.tts',
  'voice.omni',
  'vision.vlm',
] as const;
export type SlotName = (typeof SLOT_NAMES)[number];

export function isSlotName(value: unknown): value is SlotName {
  return typeof value === 'string' && (SLOT_NAMES as readonly string[]).includes(value);
}

/** MNN's LLM-engine `backend_type` strings (transformers/llm/engine: cpu, metal, cuda, opencl, vulkan, hexagon,
 *  npu — QNN builds register as npu). */
export const BACKEND_TYPES = ['cpu', 'opencl', 'vulkan', 'cuda', 'metal', 'npu', 'hexagon'] as const;
export type BackendType = (typeof BACKEND_TYPES)[number];

export type Precision = 'low' | 'normal' | 'high';
export type MemoryMode = 'low' | 'normal' | 'high';

export const BUILTINS = ['energy-vad'] as const;
export type BuiltinName = (typeof BUILTINS)[number];

/** What a slot's model runs with: the MNN engine config keys plus the CPU cluster the host is pinned to. */
export interface MnnConfig {
  backend_type: BackendType;
  thread_num: number;
  precision: Precision;
  memory: MemoryMode;
  /** Logical CPU ids the engine host is pinned to (one cluster); empty = no pinning. */
  cpus: number[];
}

export interface ModelRef {
  id: string;
  version?: string;
  variant?: string;
}

/** A slot as the configuration declares it. */
export interface SlotSpec {
  slot: SlotName;
  use: { model: ModelRef } | { builtin: BuiltinName };
  /** Higher keeps its place when memory is short; lower degrades or stays unloaded first. */
  priority: number;
  /** Context the slot needs, in tokens: sizes the KV-cache estimate. */
  contextTokens: number;
  enabled: boolean;
}

/** Fields a higher source of the desired state forces on a slot (operator pin, OTA version). */
export interface SlotConstraints {
  version?: string;
  variant?: string;
  backend?: BackendType;
  threads?: number;
  precision?: Precision;
  memory?: MemoryMode;
}

// ---- board (adapted from agent/detect Capabilities + board-support profile) ----

export interface CpuCluster {
  name: string;
  cpus: number[];
  maxFreqKHz: number;
}

export interface BackendAvailability {
  backend: BackendType;
  available: boolean;
  /** Why (not): "libOpenCL.so found, /dev/kgsl-3d0 present", "no OpenCL ICD". */
  reason: string;
  /** The API's only device is a software/CPU one (lavapipe, llvmpipe): before any measurement it ranks after
   *  the CPU backend, which runs the same silicon with kernels made for it. */
  software?: boolean;
  /** The evidence-chain step that made it unusable (device node, ICD, loader, device kind, compiled in, init
   *  probe), when the chain was checked: a pin to it is refused with this step. */
  failedStep?: { step: string; detail: string };
}

/** A profile prior: what this backend was measured to do on this board family for a reference model. */
export interface BackendPrior {
  backend: BackendType;
  prefillTokPerSec: number;
  decodeTokPerSec: number;
  /** Weight bytes of the reference model; speeds scale inversely with weight bytes (memory-bound decode). */
  refWeightBytes: number;
  source: string;
}

export interface PlanBoard {
  /** Stable id of the board family + SoC, part of every measurement key. */
  boardId: string;
  ramBytes: number;
  cpuClusters: CpuCluster[];
  backends: BackendAvailability[];
  priors: BackendPrior[];
  /** Thread advice from the board profile; when absent the fastest cluster's core count is used. */
  threadAdvice?: { threads: number; cpus: number[]; reason: string };
  /** Whether precision 'low' means fp16 on this CPU: MNN runs its Arm82 fp16 kernels only when the CPU has fp16
   *  arithmetic (CPUBackend: supportFp16arith && Precision_Low); elsewhere 'low' runs the fp32 kernels. When
   *  available, fp16 and fp32 are both CPU candidates and measurements decide. Absent: no fp16 candidate. */
  cpuFp16?: { available: boolean; reason: string };
  /** Set when this process runs under emulation (QEMU user mode): probes here say whether a candidate works,
   *  but their speeds are the emulator's, so they are shown and not used to choose. */
  emulated?: string;
}

// ---- catalog (adapted from models/ ModelCatalog) ----

export type ModelKind = 'llm' | 'vlm' | 'omni' | 'asr' | 'tts' | 'vad' | 'wake';

/**
 * The model tasks each slot can use (an omni model hears and speaks, a VLM also chats). Here beside the slot
 * names, not in settings/, because the dashboard offers the same choices: it reads this table through its
 * wire contract (agent/dashboard-api/wire.ts), and this file imports nothing.
 */
export const SLOT_KINDS: Record<SlotName, readonly ModelKind[]> = {
  'voice.vad': ['vad'],
  'voice.wake': ['wake'],
  'voice.asr': ['asr', 'omni'],
  'voice.llm': ['llm', 'vlm', 'omni'],
  'voice.omni': ['omni'],
  'voice.tts': ['tts'],
  'vision.vlm': ['vlm', 'omni'],
};

export interface CatalogVariant {
  variantId: string;
  /** fp32, fp16, int8, int4 … as the manifest states it. */
  quant: string;
  weightBytes: number;
  /** KV-cache bytes per token of context (0 for models without a KV cache). */
  kvBytesPerToken: number;
  /** Backends the variant's ops run on (from the .mnn inspector); cpu always works for MNN models. */
  backends: BackendType[];
  /** The model directory's config.json. */
  configPath: string;
  /** MNN config keys the variant sets over config.json (from its manifest). */
  configOverrides?: Record<string, unknown>;
}

export interface CatalogModel {
  id: string;
  version: string;
  kind: ModelKind;
  variants: CatalogVariant[];
}

export interface PlanCatalog {
  models: CatalogModel[];
}

// ---- measurements (the bench cache) ----

export interface ProbeKey {
  modelId: string;
  version: string;
  variantId: string;
  /** Canonical text of the MnnConfig the probe ran with (configKey()). */
  config: string;
  engineVersion: string;
  boardId: string;
}

export interface ProbeResult extends ProbeKey {
  ok: boolean;
  loadMs: number;
  prefillTokPerSec: number;
  decodeTokPerSec: number;
  peakRssBytes: number;
  measuredAt: number;
  error?: string;
}

// ---- policy ----

export interface PlanPolicy {
  /** Share of the board's RAM the models may use together. */
  budgetFraction: number;
  /** Bytes kept back from that share for the agent, the OS and workload buffers. */
  reserveBytes: number;
  /** Per loaded instance: activations, engine buffers, host process. */
  instanceOverheadBytes: number;
  /** Precision of GPU backends and of CPUs without fp16 arithmetic, and the default on a CPU with it until fp16
   *  and fp32 are both measured ('low': MNN's own LLM default). */
  precision: Precision;
  /** On a CPU with fp16 arithmetic, fp16 replaces fp32 only when measured at least this many times faster on the
   *  slot kind's reference request: fp16 changes the numbers, so it has to earn its place beyond probe noise. */
  fp16MinSpeedup: number;
  /** Set when the engine this release pins has a known defect in its fp16 CPU kernels that the engine cannot steer
   *  around: no fp16 candidate is offered (measured or not, nor as a last fallback) unless a slot pins precision
   *  'low'; the text says why. None at MNN 4d40bdbd7: its Arm82 use-after-free is avoided by the engine's sampler
   *  (engine/src/llm-options.ts, arm82SafeSampler). */
  fp16Fault?: string;
  memory: MemoryMode;
  /** Order used when nothing is known about speed (like MNN's AUTO: accelerators first). */
  staticOrder: BackendType[];
  /** Longest fallback chain kept per instance (the chosen candidate excluded). */
  maxChain: number;
  /**
   * Per text LLM instance: conversations whose KV it keeps at once (its own context included) and the bytes the
   * extra ones may hold together. The bytes are counted in the instance's memory; under memory pressure they are
   * the first to go, before any model is unloaded.
   */
  conversationSnapshots: ConversationSnapshots;
}

export interface ConversationSnapshots {
  max: number;
  budgetBytes: number;
  /** One token's KV as the catalog gives it (the engine's own bound from the config is far above it with GQA). */
  kvBytesPerToken?: number;
}

export const defaultPlanPolicy: PlanPolicy = {
  budgetFraction: 0.75,
  reserveBytes: 192 * 1024 * 1024,
  instanceOverheadBytes: 48 * 1024 * 1024,
  precision: 'low',
  fp16MinSpeedup: 1.1,
  memory: 'low',
  staticOrder: ['npu', 'hexagon', 'cuda', 'opencl', 'vulkan', 'metal', 'cpu'],
  maxChain: 3,
  // Voice, Wyoming and the OpenAI API may share one chat instance: a conversation each, and room for a
  // ~1000-token conversation of a 1–2B model's KV beside the instance's own.
  conversationSnapshots: { max: 3, budgetBytes: 64 * 1024 * 1024 },
};

export interface PlanInput {
  board: PlanBoard;
  catalog: PlanCatalog;
  slots: SlotSpec[];
  constraints: Partial<Record<SlotName, SlotConstraints>>;
  probes: ProbeResult[];
  engineVersion: string;
  policy: PlanPolicy;
}

// ---- output ----

export type Evidence =
  | { kind: 'measured'; probe: ProbeResult }
  | { kind: 'prior'; prior: BackendPrior; prefillTokPerSec: number; decodeTokPerSec: number }
  | { kind: 'static'; rank: number };

/** One way to run a model: a variant on a backend config, with what the planner knows about its speed. */
export interface Candidate {
  /** `model@version/variant|configKey`: identifies a loaded instance. */
  key: string;
  modelId: string;
  version: string;
  variantId: string;
  quant: string;
  configPath: string;
  configOverrides?: Record<string, unknown>;
  config: MnnConfig;
  memoryBytes: number;
  /** Conversation snapshots the instance keeps (text LLMs; counted in memoryBytes). */
  conversations?: ConversationSnapshots;
  evidence: Evidence;
  /** Estimated seconds for the slot kind's reference request; undefined when only the static order is known. */
  refSeconds: number | undefined;
  /** "measured: decode 41.2 tok/s, prefill 310.5 tok/s, load 820 ms (engine 3.6.1)". */
  summary: string;
  /** On the CPU of a board whose detection was adapted: which precision and why ("fp16 1.70× faster than fp32
   *  …", "fp32: fp16 not faster (0.96×) …", "precision low pinned", "no fp16 arithmetic on this CPU …"). */
  precisionReason?: string;
}

export type SlotStatus = 'placed' | 'degraded' | 'unloaded' | 'builtin' | 'disabled';

export interface InstancePlacement {
  key: string;
  chosen: Candidate;
  /** Ordered alternatives, best first; never larger than what was reserved for `chosen`. */
  fallback: Candidate[];
  slots: SlotName[];
  priority: number;
  reasons: string[];
}

export interface SlotPlacement {
  slot: SlotName;
  status: SlotStatus;
  /** The instance serving it (placed/degraded). */
  instanceKey?: string;
  builtin?: BuiltinName;
  reasons: string[];
}

export interface MemoryBudget {
  ramBytes: number;
  budgetBytes: number;
  plannedBytes: number;
  reason: string;
}

export interface Placement {
  boardId: string;
  engineVersion: string;
  budget: MemoryBudget;
  slots: SlotPlacement[];
  instances: InstancePlacement[];
}
