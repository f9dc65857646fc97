import type {
  Claim,
  CpuArchitecture,
  Evidence,
  GpuVendor,
  MnnBackend,
  SocFamily,
} from '../lib/capabilities.js';

// A board-support profile is data plus small pure matchers: how to recognise a family, the values only a table
// can give, which MNN backends it can use and under which conditions, how to place threads, and measured priors.

/** One identity fact read by agent/detect, with the evidence for it. */
export interface Fact {
  value: string;
  evidence: Evidence;
}

/** What agent/detect hands the matchers: raw identity strings, no interpretation yet. */
export interface IdentityFacts {
  architecture: CpuArchitecture | null;
  /** Device-tree compatible list, most specific (board) first. */
  compatible: Fact[];
  dtModel: Fact | null;
  soc0: { machine: Fact | null; family: Fact | null; socId: Fact | null; revision: Fact | null };
  /** cpuinfo of processor 0: `model name`, `uarch`, `marchid`, `vendor_id`, arm `CPU part`. */
  cpu: {
    modelName: Fact | null;
    uarch: Fact | null;
    marchid: Fact | null;
    vendorId: Fact | null;
    part: Fact | null;
  };
  tegraRelease: Fact | null;
}

export interface SocIdentification {
  family: SocFamily;
  vendor: string;
  name: Claim<string>;
}

export interface BackendCondition {
  backend: MnnBackend;
  /** What must hold on the board for the backend to work (checked by agent/detect). */
  condition: string;
}

export interface ThreadAdvice {
  /** Which cores to run inference threads on. */
  placement: 'big-cluster-first' | 'all-cores' | 'x-cluster-only' | 'physical-cores';
  advice: string;
}

export interface MeasuredPrior {
  engine: string;
  model: string;
  workload: string;
  backend: MnnBackend;
  threads?: number;
  /** Metric name → value, units in the name (e.g. `decode_tok_s`). */
  metrics: Record<string, number>;
  /** Where the numbers were published, quoted so a reader can check them. */
  source: string;
}

/** Table values for accelerators; the detect report cites them as `{ kind: 'table', key, profile }`. */
export interface AcceleratorHints {
  hexagonArch?: string;
  nspCount?: number;
  gpu?: { vendor: GpuVendor; name: string };
  /** GPU by SoC compatible, for generic profiles covering several SoCs. */
  gpuByCompatible?: Record<string, { vendor: GpuVendor; name: string }>;
  npuCores?: number;
  cudaComputeCapability?: string;
  /** DLA engines per Jetson module, keyed by the module's compatible prefix (`nvidia,p3767-0005`). */
  dlaByModule?: Record<string, number>;
  moduleNames?: Record<string, string>;
  /** VLEN in bits keyed by core (uarch/model name, lower case). */
  vlenByCore?: Record<string, number>;
  /** IME generation per core name; K3's A100 cluster adds IME2. */
  imeByCore?: Record<string, 1 | 2>;
  socIme2?: boolean;
}

export interface BoardProfile {
  id: SocFamily;
  title: string;
  /** The rules as prose, for the docs and for `mnn-edge detect` output. */
  matchRules: string[];
  identify(facts: IdentityFacts): SocIdentification | null;
  accelerators: AcceleratorHints;
  /** How agent/detect should look for the accelerators (nodes, debugfs, libraries). */
  probeHints: string[];
  backends: BackendCondition[];
  threads: ThreadAdvice;
  quirks: string[];
  priors: MeasuredPrior[];
}
