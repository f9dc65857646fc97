import type {
  AcceleratorInfo,
  BackendAvailability,
  BackendStep,
  Capabilities,
  Claim,
  Evidence,
  StepStatus,
} from '../../lib/capabilities.js';
import type { BrokerStatus, EngineStatus, HealthStatus } from './ports.js';

// The Overview page's document: the capability report flattened into what a person reads (values plus one
// line of evidence each), with health, uptime, engine and broker state. Pure, so it is tested on fixtures.

export interface ClaimView<T> {
  value: T | null;
  evidence: string[];
}

export interface AcceleratorView {
  kind: AcceleratorInfo['kind'];
  title: string;
  details: Array<{ label: string; value: string | number | null }>;
  deviceNodes: string[];
  libraries: string[];
  evidence: string[];
}

/**
 * A backend as the Overview's row shows it: one verdict line, and the evidence as separate steps on demand (the
 * chain `mnn-edge detect` prints: device node, ICD, loader, device kind, compiled in, init probe). A backend
 * without a chain (CPU, CUDA, QNN …) gives its reasons as unnamed steps.
 */
export interface BackendView {
  backend: string;
  usable: boolean;
  /** The decisive reason: the strongest evidence for a usable backend, the first failing step otherwise. */
  verdict: string;
  steps: Array<{ step: BackendStep['step'] | null; status: StepStatus; detail: string }>;
  /** Every reason, as the capability document has them. */
  reasons: string[];
}

export function backendView(b: BackendAvailability): BackendView {
  const steps =
    b.steps !== undefined
      ? b.steps.map((s) => ({ step: s.step, status: s.status, detail: s.detail }))
      : b.reasons.map((detail) => ({ step: null, status: (b.usable ? 'ok' : 'fail') as StepStatus, detail }));
  return { backend: b.backend, usable: b.usable, verdict: b.reasons[0] ?? '', steps, reasons: b.reasons };
}

export interface OverviewView {
  device: { deviceId: string; version: string; uptimeS: number };
  board: { vendor: ClaimView<string>; model: ClaimView<string>; compatible: string[] };
  soc: { family: ClaimView<string>; vendor: ClaimView<string>; name: ClaimView<string> };
  cpu: {
    architecture: string | null;
    logicalCpus: number | null;
    clusters: Array<{ cpus: number[]; core: string | null; maxFreqKHz: number | null }>;
    features: string[];
  };
  memory: { totalBytes: number | null; availableBytes: number | null };
  accelerators: AcceleratorView[];
  backends: BackendView[];
  thermal: Array<{ zone: string; type: string | null; tempC: number | null }>;
  detectedAt: string | null;
  engine: EngineStatus;
  broker: BrokerStatus;
  health: HealthStatus;
}

export function describeEvidence(e: Evidence): string {
  switch (e.kind) {
    case 'file':
      return `${e.path}: ${JSON.stringify(e.value)}`;
    case 'missing':
      return `${e.path} missing${e.detail ? ` (${e.detail})` : ''}`;
    case 'unreadable':
      return `${e.path} unreadable (${e.error})`;
    case 'node':
      return `${e.path} ${e.present ? 'present' : 'absent'} (${e.via})`;
    case 'table':
      return `table ${e.profile}: ${e.key}${e.note ? ` (${e.note})` : ''}`;
    case 'inferred':
      return `inferred: ${e.rule}`;
  }
}

function claim<T>(c: Claim<T>): ClaimView<T> {
  return { value: c.value, evidence: c.evidence.map(describeEvidence) };
}

function acceleratorView(a: AcceleratorInfo): AcceleratorView {
  const base = {
    kind: a.kind,
    deviceNodes: a.deviceNodes,
    libraries: a.libraries,
    evidence: a.evidence.map(describeEvidence),
  };
  switch (a.kind) {
    case 'hexagon-htp':
      return {
        ...base,
        title: 'Qualcomm Hexagon NPU',
        details: [
          { label: 'arch', value: a.arch.value },
          { label: 'NSPs', value: a.nspCount.value },
        ],
      };
    case 'rknpu':
      return {
        ...base,
        title: 'Rockchip NPU',
        details: [
          { label: 'driver', value: a.driver.value },
          { label: 'driver version', value: a.driverVersion.value },
          { label: 'cores', value: a.cores.value },
          { label: 'device', value: a.deviceNode.value },
        ],
      };
    case 'nvidia-gpu':
      return {
        ...base,
        title: a.name.value ?? 'NVIDIA GPU',
        details: [
          { label: 'compute capability', value: a.computeCapability.value },
          { label: 'L4T', value: a.l4tRelease.value },
          { label: 'JetPack', value: a.jetpack.value },
          { label: 'DLA cores', value: a.dlaCount.value },
        ],
      };
    case 'gpu':
      return {
        ...base,
        title: a.name.value ?? `GPU (${a.vendor})`,
        details: [
          { label: 'vendor', value: a.vendor },
          { label: 'OpenCL', value: a.openclLibraries.join(', ') || null },
          { label: 'Vulkan', value: a.vulkanLibraries.join(', ') || null },
        ],
      };
    case 'spacemit-ai':
      return {
        ...base,
        title: 'SpacemiT AI cores',
        details: [
          {
            label: 'AI thread gate',
            value: a.aiThreadGate.value === null ? null : String(a.aiThreadGate.value),
          },
        ],
      };
  }
}

export function overviewOf(
  caps: Capabilities | undefined,
  status: {
    deviceId: string;
    version: string;
    uptimeS: number;
    engine: EngineStatus;
    broker: BrokerStatus;
    health: HealthStatus;
  },
): OverviewView {
  const unknown = <T>(): ClaimView<T> => ({ value: null, evidence: ['capability detection has not run'] });
  return {
    device: { deviceId: status.deviceId, version: status.version, uptimeS: status.uptimeS },
    board: caps
      ? {
          vendor: claim(caps.board.vendor),
          model: claim(caps.board.model),
          compatible: caps.board.compatible.value ?? [],
        }
      : { vendor: unknown(), model: unknown(), compatible: [] },
    soc: caps
      ? { family: claim(caps.soc.family), vendor: claim(caps.soc.vendor), name: claim(caps.soc.name) }
      : { family: unknown(), vendor: unknown(), name: unknown() },
    cpu: {
      architecture: caps?.cpu.architecture.value ?? null,
      logicalCpus: caps?.cpu.logicalCpus.value ?? null,
      clusters: (caps?.cpu.clusters ?? []).map((c) => ({
        cpus: c.cpus,
        core: c.core,
        maxFreqKHz: c.maxFreqKHz,
      })),
      features: caps
        ? Object.entries(caps.cpu.features)
            .filter(([name, c]) => name !== 'rvvVlen' && c.value === true)
            .map(([name]) => name)
        : [],
    },
    memory: {
      totalBytes: caps?.memory.totalBytes.value ?? null,
      availableBytes: caps?.memory.availableBytes.value ?? null,
    },
    accelerators: (caps?.accelerators ?? []).map(acceleratorView),
    backends: (caps?.backends ?? []).map(backendView),
    thermal: (caps?.thermal ?? []).map((z) => ({
      zone: z.zone,
      type: z.type,
      tempC: z.tempMilliC.value === null ? null : z.tempMilliC.value / 1000,
    })),
    detectedAt: caps?.detectedAt ?? null,
    engine: status.engine,
    broker: status.broker,
    health: status.health,
  };
}
