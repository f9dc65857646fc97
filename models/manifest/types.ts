// The model package manifest (`mnn-edge.json`): what a package is, and for each variant what it needs to run.
// The JSON schema in schema.ts describes the same shape; docs/schemas/model-package.schema.json is exported from it.

export const MANIFEST_FILE = 'mnn-edge.json';
export const MANIFEST_SCHEMA_VERSION = 1;

export const MODEL_TASKS = [
  'llm',
  'vlm',
  'omni',
  'asr',
  'tts',
  'vad',
  'wake',
  'vision',
  'embedding',
] as const;
export type ModelTask = (typeof MODEL_TASKS)[number];

/** MNN forward types a variant can ask for (MNNForwardType names, lower-case). */
export const MNN_BACKENDS = [
  'cpu',
  'opencl',
  'vulkan',
  'metal',
  'cuda',
  'opengl',
  'nnapi',
  'coreml',
  'qnn',
  'hiai',
  'tensorrt',
  'musa',
  'hexagon',
] as const;
export type MnnBackend = (typeof MNN_BACKENDS)[number];

/** Engine features beyond plain inference that libMNN must have been built with. */
export const ENGINE_FEATURES = ['llm', 'omni', 'audio', 'vision'] as const;
export type EngineFeature = (typeof ENGINE_FEATURES)[number];

export interface VariantRequirements {
  backend: MnnBackend;
  /** Qualcomm Hexagon NPU architecture, e.g. 73 for v73. */
  minHexagonArch?: number;
  /** CUDA compute capability, "major.minor". */
  minCudaComputeCapability?: string;
  /** CPU features the kernels use, as /proc/cpuinfo spells them (e.g. "asimddp", "i8mm", "avx2", "v"). */
  cpuFeatures?: string[];
  minRamBytes?: number;
  /** Oldest MNN release whose engine runs this variant (semver). */
  minMnnVersion?: string;
  engineFeatures?: EngineFeature[];
}

export interface VariantPrecision {
  /** Storage type of the weights: fp32, fp16, bf16, int8, int4 … */
  weights: string;
  /** Type used for activations at run time: fp32, fp16, int8 … */
  activations: string;
  /** Quantisation block size along the input channel (0 = per channel). */
  quantBlock?: number;
  symmetric?: boolean;
  /** Short label as people write it, e.g. "W4A16". */
  label?: string;
}

export interface ModelFileEntry {
  /** Path relative to the package root, '/'-separated, no '..'. */
  path: string;
  length: number;
  sha256: string;
}

export interface MemoryEstimate {
  weightsBytes: number;
  kvCacheBytes?: number;
  /** The context length the KV-cache figure is computed for. */
  contextLength?: number;
}

export interface ModelVariant {
  name: string;
  requirements: VariantRequirements;
  precision: VariantPrecision;
  files: ModelFileEntry[];
  memory: MemoryEstimate;
  /** Keys merged over the package's config.json when this variant runs (MNN's own config keys). */
  configOverrides?: Record<string, unknown>;
}

export interface ManifestSource {
  url?: string;
  /** Upstream model this one was converted from, e.g. "Qwen/Qwen2.5-0.5B-Instruct". */
  upstream?: string;
  converter?: string;
}

export const HUB_NAMES = ['huggingface', 'modelscope'] as const;
export type HubName = (typeof HUB_NAMES)[number];

/** How a hub-pulled file's bytes were checked: against the hub's sha256 (LFS oid / ModelScope Sha256), against
 *  the hub's git blob id, or only hashed on download (trusted on first use). */
export type HubFileCheck = 'hub-sha256' | 'git-blob-sha1' | 'computed';

export interface HubProvenanceFile {
  path: string;
  sha256: string;
  check: HubFileCheck;
  /** The hub's git blob id, for files it lists without a sha256 (how `models update` tells them apart). */
  gitOid?: string;
}

/** Where a package pulled from a model hub came from. Hub packages carry no signature: they are trusted on
 *  first use, and every place that shows one says so. */
export interface HubProvenance {
  hub: HubName;
  /** owner/name on the hub. */
  repo: string;
  /** The revision asked for (branch, tag or commit). */
  revision: string;
  /** The commit that revision resolved to when pulled. */
  commit: string;
  endpoint: string;
  pulledAt: string;
  trust: 'unsigned-tofu';
  files: HubProvenanceFile[];
}

/** Present when the manifest was derived from a bare MNN export directory rather than written by a person. */
export interface DerivedMarker {
  from: 'mnn-export';
  /** What derivation had to guess, so an operator can check it. */
  assumptions: string[];
}

export interface ModelManifest {
  schemaVersion: typeof MANIFEST_SCHEMA_VERSION;
  id: string;
  version: string;
  task: ModelTask;
  family?: string;
  license?: string;
  description?: string;
  source?: ManifestSource;
  derived?: DerivedMarker;
  provenance?: HubProvenance;
  variants: ModelVariant[];
}
