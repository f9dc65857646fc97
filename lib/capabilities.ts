// The capability document: what the board is, with the evidence for every claim. Other modules (plan, fleet,
// dashboard) import these types, so names here are part of the agent's internal contract: extend, don't rename.

/** Why we believe a value. Unknowns carry evidence too: the file that was missing or unreadable. */
export type Evidence =
  /** A file below the root was read; `value` is the excerpt that decided the claim. */
  | { kind: 'file'; path: string; value: string }
  /** A file we looked for does not exist (or is empty where content was needed). */
  | { kind: 'missing'; path: string; detail?: string }
  /** A file exists but could not be read, e.g. a root-only debugfs node: `error` is 'permission denied'. */
  | { kind: 'unreadable'; path: string; error: string }
  /** A device node or library exists (or not): from stat on a board, from present.txt in a fixture. */
  | { kind: 'node'; path: string; present: boolean; via: 'stat' | 'present.txt' }
  /** A value only a table can give (CUDA compute capability, Hexagon arch, VLEN): the key and the profile. */
  | { kind: 'table'; key: string; profile: string; note?: string }
  /** A value inferred from other evidence by a stated rule (e.g. which DRM node is the NPU's). */
  | { kind: 'inferred'; rule: string };

/** A value and why; `value === null` means unknown, never guessed. */
export interface Claim<T> {
  value: T | null;
  evidence: Evidence[];
}

/** Board-support profile ids; `soc.family` names the profile whose rules matched. */
export type SocFamily =
  | 'qcs9075'
  | 'qcs6490'
  | 'rk3588'
  | 'jetson-orin'
  | 'spacemit-k1'
  | 'spacemit-k3'
  | 'riscv-generic'
  | 'arm64-generic'
  | 'x86-64';

export type CpuArchitecture = 'aarch64' | 'riscv64' | 'x86_64' | 'armv7' | 'unknown';

/** ISA features normalised across architectures; a feature that cannot exist on this architecture is false. */
export interface CpuFeatures {
  fp16: Claim<boolean>;
  dotprod: Claim<boolean>;
  i8mm: Claim<boolean>;
  bf16: Claim<boolean>;
  sve: Claim<boolean>;
  sve2: Claim<boolean>;
  sme: Claim<boolean>;
  sme2: Claim<boolean>;
  /** RISC-V vector extension (single-letter `v` before the first `_` of the ISA string). */
  rvv: Claim<boolean>;
  /** Vector register length in bits; not in cpuinfo, so it comes from a core table. */
  rvvVlen: Claim<number>;
  /** SpacemiT integrated matrix extension (vmadot), generation 1 and 2. */
  ime: Claim<boolean>;
  ime2: Claim<boolean>;
  avx2: Claim<boolean>;
  avx512f: Claim<boolean>;
  avx512vnni: Claim<boolean>;
  avx512bf16: Claim<boolean>;
  avxVnni: Claim<boolean>;
}

export type CpuFeatureName = keyof CpuFeatures;

/** CPUs sharing a core type and a maximum frequency. Listed fastest first. */
export interface CpuCluster {
  cpus: number[];
  coreCount: number;
  /** e.g. "Cortex-A78", "Spacemit X60"; null when the part number is not in our table. */
  core: string | null;
  maxFreqKHz: number | null;
  evidence: Evidence[];
}

export interface CpuInfo {
  architecture: Claim<CpuArchitecture>;
  logicalCpus: Claim<number>;
  clusters: CpuCluster[];
  /** The raw ISA string on RISC-V (`isa` line), the model name elsewhere. */
  model: Claim<string>;
  features: CpuFeatures;
}

export interface MemoryInfo {
  totalBytes: Claim<number>;
  availableBytes: Claim<number>;
  pageSize: Claim<number>;
}

interface AcceleratorBase {
  /** Device nodes found (absolute paths as on the board). */
  deviceNodes: string[];
  /** Driver/runtime libraries found. */
  libraries: string[];
  evidence: Evidence[];
}

export interface HexagonInfo extends AcceleratorBase {
  kind: 'hexagon-htp';
  /** e.g. "v73". */
  arch: Claim<string>;
  nspCount: Claim<number>;
  fastrpcNodes: string[];
  qnnLibraries: string[];
}

export interface RknpuInfo extends AcceleratorBase {
  kind: 'rknpu';
  driver: Claim<'rknpu-vendor' | 'rocket-mainline'>;
  driverVersion: Claim<string>;
  cores: Claim<number>;
  /** The node the runtime talks to: /dev/rknpu, a DRM render node, or /dev/accel/accel0. */
  deviceNode: Claim<string>;
}

export interface NvidiaGpuInfo extends AcceleratorBase {
  kind: 'nvidia-gpu';
  name: Claim<string>;
  computeCapability: Claim<string>;
  l4tRelease: Claim<string>;
  jetpack: Claim<string>;
  dlaCount: Claim<number>;
}

export type GpuVendor = 'arm-mali' | 'qualcomm-adreno' | 'broadcom-v3d' | 'imagination' | 'unknown';

export interface GpuInfo extends AcceleratorBase {
  kind: 'gpu';
  vendor: GpuVendor;
  name: Claim<string>;
  openclLibraries: string[];
  vulkanLibraries: string[];
}

export interface SpacemitAiInfo extends AcceleratorBase {
  kind: 'spacemit-ai';
  /** Cores that need `/proc/set_ai_thread` before a thread may run on them (K3 A100 cluster). */
  aiThreadGate: Claim<boolean>;
}

export type AcceleratorInfo = HexagonInfo | RknpuInfo | NvidiaGpuInfo | GpuInfo | SpacemitAiInfo;

export interface ThermalZone {
  zone: string;
  type: string | null;
  tempMilliC: Claim<number>;
}

/** MNN forward type names, plus the RKNN plugin (which runs through MNN's CPU plugin path). */
export type MnnBackend = 'cpu' | 'opencl' | 'vulkan' | 'cuda' | 'nn' | 'qnn' | 'hexagon' | 'rknn';

export const MNN_BACKENDS: readonly MnnBackend[] = [
  'cpu',
  'opencl',
  'vulkan',
  'cuda',
  'nn',
  'qnn',
  'hexagon',
  'rknn',
];

/** One link of a GPU backend's evidence chain, in the order a user would check them. */
export type BackendStepName = 'device-node' | 'icd' | 'loader' | 'device-kind' | 'compiled-in' | 'init-probe';

/** `skip`: not needed here (a software driver needs no device node); `unchecked`: nobody could ask yet. */
export type StepStatus = 'ok' | 'fail' | 'skip' | 'unchecked';

export interface BackendStep {
  step: BackendStepName;
  status: StepStatus;
  detail: string;
  evidence: Evidence[];
}

/** A GPU API's device: real GPU, or a software/CPU implementation (lavapipe, pocl) that ranks after the CPU. */
export type DeviceKind = 'gpu' | 'software' | 'unknown';

export interface BackendAvailability {
  backend: MnnBackend;
  usable: boolean;
  /** Why usable or not, one sentence each, naming the file or library that decided it; the first failing step first. */
  reasons: string[];
  /** The evidence chain (Vulkan, OpenCL): every step with its result, so "compiled in" and "initialises" stay apart. */
  steps?: BackendStep[];
  deviceKind?: DeviceKind;
}

export interface Capabilities {
  schemaVersion: 1;
  /** The directory that was probed (`/` on a board). */
  root: string;
  detectedAt: string;
  board: {
    vendor: Claim<string>;
    model: Claim<string>;
    compatible: Claim<string[]>;
  };
  soc: {
    family: Claim<SocFamily>;
    vendor: Claim<string>;
    name: Claim<string>;
    socId: Claim<string>;
    revision: Claim<string>;
  };
  cpu: CpuInfo;
  memory: MemoryInfo;
  accelerators: AcceleratorInfo[];
  thermal: ThermalZone[];
  backends: BackendAvailability[];
  /** The installed engine's compiled-in backends, when the caller knew them; null = not checked. */
  engineBackends: string[] | null;
}
