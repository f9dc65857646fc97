import type {
  AcceleratorInfo,
  BackendAvailability,
  BackendStep,
  CpuInfo,
  DeviceKind,
  HexagonInfo,
  MnnBackend,
  NvidiaGpuInfo,
  RknpuInfo,
} from '../../lib/capabilities.js';
import { MNN_BACKENDS } from '../../lib/capabilities.js';
import { type GpuLoaderEnv, gpuBackendChain, summarise } from './gpu-chain.js';
import type { LibraryFinder } from './libraries.js';
import type { RootFs } from './root-fs.js';

// A backend is usable when the board has the hardware and its driver, the userspace libraries are present, and
// (when the caller knows it) the installed engine was compiled with it. Each reason names what decided it.

/** The oldest HTP generation MNN's direct Hexagon ops library is built for (htp-ops-lib: v73, v75, v79). */
const MIN_DIRECT_HEXAGON_ARCH = 73;

function find<K extends AcceleratorInfo['kind']>(accs: AcceleratorInfo[], kind: K) {
  return accs.find((a) => a.kind === kind) as Extract<AcceleratorInfo, { kind: K }> | undefined;
}

function cpu(info: CpuInfo): BackendAvailability {
  const f = info.features;
  const on = (Object.keys(f) as (keyof typeof f)[]).filter((k) => f[k].value === true);
  const arch = info.architecture.value ?? 'unknown architecture';
  return {
    backend: 'cpu',
    usable: true,
    reasons: [`always available (${arch}${on.length ? `; ISA: ${on.join(', ')}` : ''})`],
  };
}

function cuda(nvidia: NvidiaGpuInfo | undefined): BackendAvailability {
  if (!nvidia || nvidia.deviceNodes.length === 0)
    return {
      backend: 'cuda',
      usable: false,
      reasons: ['no NVIDIA GPU node (/dev/nvgpu/igpu0/ctrl, /dev/nvidia0)'],
    };
  const driver = nvidia.libraries.filter((l) => /libcuda\.so/.test(l));
  const runtime = nvidia.libraries.filter((l) => /libcudart\.so/.test(l));
  const missing = [driver.length ? null : 'libcuda.so.1', runtime.length ? null : 'libcudart.so'].filter(
    Boolean,
  );
  if (missing.length > 0)
    return {
      backend: 'cuda',
      usable: false,
      reasons: [`NVIDIA GPU present but ${missing.join(' and ')} not found`],
    };
  const cc = nvidia.computeCapability.value ? `, compute capability ${nvidia.computeCapability.value}` : '';
  return {
    backend: 'cuda',
    usable: true,
    reasons: [`NVIDIA GPU (${nvidia.deviceNodes[0]}${cc}) with ${[...driver, ...runtime].join(', ')}`],
  };
}

function cdspNode(h: HexagonInfo): string | undefined {
  return h.fastrpcNodes.find((n) => /fastrpc-cdsp\d*$/.test(n) || n.endsWith('adsprpc-smd'));
}

function qnn(backend: 'nn' | 'qnn', h: HexagonInfo | undefined): BackendAvailability {
  const prefix = backend === 'nn' ? 'MNN_FORWARD_NN is the QNN backend on Linux: ' : '';
  if (!h)
    return {
      backend,
      usable: false,
      reasons: [`${prefix}no Hexagon NPU (no FastRPC node, not a Qualcomm SoC)`],
    };
  const node = cdspNode(h);
  const has = (name: string) => h.qnnLibraries.some((l) => l.endsWith(`/${name}`));
  const stub = h.qnnLibraries.find((l) => /libQnnHtpV\d+Stub\.so$/.test(l));
  const missing = [
    node ? null : 'a FastRPC CDSP node (/dev/fastrpc-cdsp or /dev/adsprpc-smd)',
    has('libQnnHtp.so') ? null : 'libQnnHtp.so',
    has('libQnnSystem.so') ? null : 'libQnnSystem.so',
    stub ? null : `libQnnHtp${(h.arch.value ?? 'V##').toUpperCase()}Stub.so`,
  ].filter(Boolean);
  if (missing.length > 0)
    return {
      backend,
      usable: false,
      reasons: [
        `${prefix}Hexagon ${h.arch.value ?? ''} HTP present but missing ${missing.join(', ')}`.replace(
          '  ',
          ' ',
        ),
      ],
    };
  return {
    backend,
    usable: true,
    reasons: [
      `${prefix}HTP ${h.arch.value ?? '(arch unknown)'} via ${node} with ${h.qnnLibraries.map((l) => l.split('/').pop()).join(', ')}`,
    ],
  };
}

function hexagon(h: HexagonInfo | undefined, libs: LibraryFinder): BackendAvailability {
  if (!h)
    return {
      backend: 'hexagon',
      usable: false,
      reasons: ['no Hexagon NPU (no FastRPC node, not a Qualcomm SoC)'],
    };
  const reasons: string[] = [];
  const archNum = h.arch.value ? Number(h.arch.value.slice(1)) : null;
  if (archNum === null) reasons.push('HTP architecture unknown');
  else if (archNum < MIN_DIRECT_HEXAGON_ARCH)
    reasons.push(
      `HTP ${h.arch.value} is older than v${MIN_DIRECT_HEXAGON_ARCH}, the oldest MNN's Hexagon ops library targets`,
    );
  const node = cdspNode(h);
  if (!node) reasons.push('no FastRPC CDSP node (/dev/fastrpc-cdsp or /dev/adsprpc-smd)');
  const rpc = h.libraries.find((l) => l.endsWith('/libcdsprpc.so'));
  if (!rpc) reasons.push('libcdsprpc.so not found');
  if (reasons.length > 0) return { backend: 'hexagon', usable: false, reasons };
  const ops = libs.find(['libMNN_htpops.so']);
  return {
    backend: 'hexagon',
    usable: true,
    reasons: [
      `HTP ${h.arch.value} via ${node} with ${rpc}`,
      ops.length > 0
        ? `ops library ${ops[0]}`
        : 'needs libMNN_htpops.so (+ skel on the DSP path) from the engine install',
    ],
  };
}

function rknn(npu: RknpuInfo | undefined): BackendAvailability {
  if (!npu) return { backend: 'rknn', usable: false, reasons: ['no Rockchip NPU'] };
  if (npu.driver.value === 'rocket-mainline')
    return {
      backend: 'rknn',
      usable: false,
      reasons: [
        'NPU is driven by the mainline rocket driver (/dev/accel/accel0), which librknnrt does not support',
      ],
    };
  const reasons: string[] = [];
  if (!npu.deviceNode.value) reasons.push('RKNPU device node not found (/dev/rknpu or its DRM render node)');
  if (npu.libraries.length === 0) reasons.push('librknnrt.so not found');
  if (reasons.length > 0) return { backend: 'rknn', usable: false, reasons };
  const version = npu.driverVersion.value ? ` ${npu.driverVersion.value}` : ' (version unknown)';
  const out = [
    `RKNPU driver${version} at ${npu.deviceNode.value} with ${npu.libraries.join(', ')}; runs as the MNN RKNN plugin on the CPU backend`,
  ];
  if (npu.driverVersion.value && compareVersions(npu.driverVersion.value, '0.9.7') < 0)
    out.push(`driver ${npu.driverVersion.value} is older than 0.9.7, which rkllm warns about`);
  return { backend: 'rknn', usable: true, reasons: out };
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Engine backend names as the engine might report them, mapped to ours. */
function engineHas(engine: readonly string[], backend: MnnBackend): boolean {
  const names = new Set(engine.map((e) => e.toLowerCase()));
  if (backend === 'nn' || backend === 'qnn') return names.has('nn') || names.has('qnn');
  return names.has(backend);
}

export function backendAvailability(
  cpuInfo: CpuInfo,
  accs: AcceleratorInfo[],
  libs: LibraryFinder,
  engineBackends: readonly string[] | null,
  board: { fs: RootFs; env: GpuLoaderEnv },
): BackendAvailability[] {
  const gpu = find(accs, 'gpu');
  const nvidia = find(accs, 'nvidia-gpu');
  const hex = find(accs, 'hexagon-htp');
  const chainInput = { fs: board.fs, libs, env: board.env, gpu, nvidia };
  const byName: Record<MnnBackend, BackendAvailability> = {
    cpu: cpu(cpuInfo),
    opencl: gpuBackendChain('opencl', chainInput),
    vulkan: gpuBackendChain('vulkan', chainInput),
    cuda: cuda(nvidia),
    nn: qnn('nn', hex),
    qnn: qnn('qnn', hex),
    hexagon: hexagon(hex, libs),
    rknn: rknn(find(accs, 'rknpu')),
  };
  return withEngineBackends(
    MNN_BACKENDS.map((name) => byName[name]),
    engineBackends,
  );
}

/** What the engine host found for one backend: the chain links only MNN itself can answer. */
export interface EngineBackendProbe {
  name: string;
  compiledIn: boolean;
  /** Steps the engine checked (loader, device-kind, init-probe …); they replace the board's guesses. */
  steps: BackendStep[];
  /** The device the engine enumerated, when it got that far. */
  deviceKind?: DeviceKind;
}

/** What the board offers, less what the installed MNN was built without (the CPU is always there). */
export function withEngineBackends(
  board: readonly BackendAvailability[],
  engineBackends: readonly string[] | null,
  probes: readonly EngineBackendProbe[] = [],
): BackendAvailability[] {
  return board.map((b) => {
    if (b.backend === 'cpu' || !engineBackends) return b;
    const compiled = engineHas(engineBackends, b.backend);
    if (!b.steps || (b.backend !== 'vulkan' && b.backend !== 'opencl'))
      return compiled
        ? b
        : { backend: b.backend, usable: false, reasons: [`MNN built without ${b.backend}`, ...b.reasons] };
    const probe = probes.find((p) => p.name === b.backend);
    const byStep = new Map(b.steps.map((s) => [s.step, s]));
    byStep.set('compiled-in', {
      step: 'compiled-in',
      status: compiled ? 'ok' : 'fail',
      detail: compiled
        ? `the installed MNN has a ${b.backend} runtime creator registered`
        : `MNN built without ${b.backend} (rebuild MNN with -DMNN_${b.backend.toUpperCase()}=ON)`,
      evidence: [],
    });
    // The engine saw the device and ran a graph: its answer outranks what files suggested.
    for (const s of probe?.steps ?? []) byStep.set(s.step, s);
    if (
      probe &&
      !probe.steps.some((s) => s.step === 'init-probe') &&
      probe.steps.some((s) => s.status === 'fail')
    )
      byStep.set('init-probe', {
        step: 'init-probe',
        status: 'skip',
        detail: 'not attempted: an earlier step failed',
        evidence: [],
      });
    const steps = b.steps.map((s) => byStep.get(s.step) ?? s);
    return summarise(b.backend, steps, probe?.deviceKind ?? b.deviceKind ?? 'unknown');
  });
}
