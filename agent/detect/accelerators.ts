import { jetpackForL4t } from '../../board-support/profiles/jetson.js';
import type { BoardProfile, Fact } from '../../board-support/types.js';
import type {
  AcceleratorInfo,
  Claim,
  Evidence,
  GpuInfo,
  GpuVendor,
  HexagonInfo,
  NvidiaGpuInfo,
  RknpuInfo,
  SpacemitAiInfo,
} from '../../lib/capabilities.js';
import type { LibraryFinder } from './libraries.js';
import type { RootFs } from './root-fs.js';

// Accelerator probes. Each returns null when the board shows no sign of the device; otherwise every field is a
// claim, so "the NPU is there but its driver version is root-only" reads as exactly that.

export interface AcceleratorContext {
  fs: RootFs;
  libs: LibraryFinder;
  profile: BoardProfile | null;
  compatible: Fact[];
  tegraRelease: { fact: Fact | null; evidence: Evidence };
}

const table = (profile: BoardProfile, key: string, note?: string): Evidence =>
  note === undefined
    ? { kind: 'table', key, profile: profile.id }
    : { kind: 'table', key, profile: profile.id, note };

function presentNodes(fs: RootFs, paths: readonly string[]): { nodes: string[]; evidence: Evidence[] } {
  const evidence = paths.map((p) => fs.node(p));
  return {
    nodes: evidence.filter((e) => e.present).map((e) => e.path),
    evidence: evidence.filter((e) => e.present),
  };
}

const libEvidence = (fs: RootFs, paths: string[]): Evidence[] => paths.map((p) => fs.node(p));

export function probeHexagon(ctx: AcceleratorContext): HexagonInfo | null {
  const { fs, libs, profile } = ctx;
  const fastrpc = fs
    .list('/dev')
    .filter((n) => /^fastrpc-[a-z]+\d*(-secure)?$/.test(n) || n === 'adsprpc-smd')
    .map((n) => `/dev/${n}`);
  const hint = profile?.accelerators.hexagonArch;
  if (fastrpc.length === 0 && !hint) return null;
  const rpcLibs = libs.find(['libcdsprpc.so', 'libadsprpc.so']);
  const qnn = [
    ...libs.find(['libQnnHtp.so', 'libQnnSystem.so', 'libQnnHtpPrepare.so']),
    ...libs.match(/^libQnnHtpV\d+Stub\.so$/),
  ];
  const stub = qnn.map((p) => /libQnnHtpV(\d+)Stub\.so$/.exec(p)).find((m) => m !== null);
  let arch: Claim<string>;
  if (stub) {
    const fromLib = `v${stub[1]}`;
    const evidence: Evidence[] = [fs.node(stub.input)];
    if (hint && profile)
      evidence.push(table(profile, 'hexagonArch', hint === fromLib ? 'agrees' : `table says ${hint}`));
    arch = { value: fromLib, evidence };
  } else if (hint && profile) arch = { value: hint, evidence: [table(profile, 'hexagonArch')] };
  else
    arch = {
      value: null,
      evidence: [
        {
          kind: 'missing',
          path: '/usr/lib/libQnnHtpV*Stub.so',
          detail: 'no QNN stub library and no table entry',
        },
      ],
    };

  // One CDSP FastRPC domain per NSP (cdsp, cdsp1, …); -secure nodes are the same NSP.
  const domains = new Set(
    fastrpc.map((p) => /fastrpc-(cdsp\d*)/.exec(p)?.[1]).filter((d): d is string => d !== undefined),
  );
  const nodeEvidence = fastrpc.filter((p) => p.includes('cdsp')).map((p) => fs.node(p));
  const tableNsp = profile?.accelerators.nspCount;
  let nspCount: Claim<number>;
  if (tableNsp !== undefined && profile && tableNsp > domains.size)
    nspCount = {
      value: tableNsp,
      evidence: [
        ...nodeEvidence,
        table(
          profile,
          'nspCount',
          `${domains.size} CDSP FastRPC domain(s) seen; older kernels give NSP1 the same name as NSP0`,
        ),
      ],
    };
  else if (domains.size > 0) nspCount = { value: domains.size, evidence: nodeEvidence };
  else
    nspCount = {
      value: null,
      evidence: [{ kind: 'missing', path: '/dev/fastrpc-cdsp', detail: 'no CDSP FastRPC node' }],
    };

  return {
    kind: 'hexagon-htp',
    arch,
    nspCount,
    fastrpcNodes: fastrpc,
    qnnLibraries: qnn,
    deviceNodes: fastrpc,
    libraries: [...rpcLibs, ...qnn],
    evidence: [...fastrpc.map((p) => fs.node(p)), ...libEvidence(fs, rpcLibs)],
  };
}

export function probeRknpu(ctx: AcceleratorContext): RknpuInfo | null {
  const { fs, libs, profile } = ctx;
  const version = fs.read('/sys/kernel/debug/rknpu/version');
  const load = fs.read('/sys/kernel/debug/rknpu/load');
  const devfreq = fs.list('/sys/class/devfreq').filter((n) => /\.npu$/.test(n));
  const rknpuNode = fs.node('/dev/rknpu');
  const accel = fs.node('/dev/accel/accel0');
  const isRockchip = ctx.compatible.some((c) => c.value.startsWith('rockchip,'));
  const vendorSigns =
    version.ok || devfreq.length > 0 || rknpuNode.present || version.evidence.kind === 'unreadable';
  if (!vendorSigns && !(accel.present && isRockchip) && profile?.accelerators.npuCores === undefined)
    return null;

  const evidence: Evidence[] = [];
  const devfreqEvidence = devfreq.map((n): Evidence => {
    const gov = fs.read(`/sys/class/devfreq/${n}/governor`);
    return gov.ok ? gov.evidence : { kind: 'file', path: `/sys/class/devfreq/${n}`, value: n };
  });
  evidence.push(...devfreqEvidence);

  const driver: Claim<'rknpu-vendor' | 'rocket-mainline'> = vendorSigns
    ? {
        value: 'rknpu-vendor',
        evidence: [
          version.ok
            ? version.evidence
            : rknpuNode.present
              ? rknpuNode
              : (devfreqEvidence[0] ?? version.evidence),
        ],
      }
    : accel.present
      ? { value: 'rocket-mainline', evidence: [accel] }
      : { value: null, evidence: [version.evidence, rknpuNode, accel] };

  const vm = version.ok ? /v?(\d+\.\d+\.\d+)/.exec(version.text) : null;
  const driverVersion: Claim<string> = vm
    ? { value: vm[1]!, evidence: [version.evidence] }
    : {
        value: null,
        evidence: [
          version.ok ? { kind: 'missing', path: version.path, detail: 'no x.y.z version' } : version.evidence,
        ],
      };

  const loadCores = load.ok ? (load.text.match(/Core\d+:/g) ?? []).length : 0;
  const tableCores = profile?.accelerators.npuCores;
  const cores: Claim<number> =
    loadCores > 0
      ? {
          value: loadCores,
          evidence: [
            load.evidence,
            ...(tableCores !== undefined && profile
              ? [table(profile, 'npuCores', tableCores === loadCores ? 'agrees' : `table says ${tableCores}`)]
              : []),
          ],
        }
      : tableCores !== undefined && profile
        ? { value: tableCores, evidence: [table(profile, 'npuCores'), load.evidence] }
        : { value: null, evidence: [load.evidence] };

  // Which node the runtime opens: /dev/rknpu (DMA_HEAP builds), accel0 (rocket), else the rknpu DRM device.
  const renders = fs.list('/dev/dri').filter((n) => /^renderD\d+$/.test(n));
  let deviceNode: Claim<string>;
  if (rknpuNode.present) deviceNode = { value: '/dev/rknpu', evidence: [rknpuNode] };
  else if (driver.value === 'rocket-mainline') deviceNode = { value: '/dev/accel/accel0', evidence: [accel] };
  else {
    const bound = renders.find((n) => {
      const uevent = fs.read(`/sys/class/drm/${n}/device/uevent`);
      return uevent.ok && /^DRIVER=rknpu$/m.test(uevent.text);
    });
    if (bound)
      deviceNode = {
        value: `/dev/dri/${bound}`,
        evidence: [{ kind: 'file', path: `/sys/class/drm/${bound}/device/uevent`, value: 'DRIVER=rknpu' }],
      };
    else if (driver.value === 'rknpu-vendor' && renders.length >= 2) {
      const last = `/dev/dri/${renders[renders.length - 1]}`;
      deviceNode = {
        value: last,
        evidence: [
          fs.node(last),
          fs.node('/dev/rknpu'),
          {
            kind: 'inferred',
            rule: 'no /dev/rknpu, so the driver is the DRM_GEM build; it registers its DRM device after the display, taking the last render node (sysfs driver link not available)',
          },
        ],
      };
    } else
      deviceNode = {
        value: null,
        evidence: [rknpuNode, accel, ...renders.map((n) => fs.node(`/dev/dri/${n}`))],
      };
  }
  const nodes = [rknpuNode, accel].filter((e) => e.present).map((e) => e.path);
  if (deviceNode.value && !nodes.includes(deviceNode.value)) nodes.push(deviceNode.value);
  const runtime = libs.find(['librknnrt.so']);
  return {
    kind: 'rknpu',
    driver,
    driverVersion,
    cores,
    deviceNode,
    deviceNodes: nodes,
    libraries: runtime,
    evidence: [...evidence, ...libEvidence(fs, runtime)],
  };
}

const NVIDIA_NODES = [
  '/dev/nvgpu/igpu0/ctrl',
  '/dev/nvhost-ctrl-gpu',
  '/dev/nvmap',
  '/dev/nvidia0',
  '/dev/nvidiactl',
  '/dev/nvidia-uvm',
];

export function probeNvidia(ctx: AcceleratorContext): NvidiaGpuInfo | null {
  const { fs, libs, profile } = ctx;
  const { nodes, evidence } = presentNodes(fs, NVIDIA_NODES);
  const tegra = ctx.tegraRelease;
  if (nodes.length === 0 && !tegra.fact && profile?.id !== 'jetson-orin') return null;
  const cudaLibs = libs.find(['libcuda.so.1', 'libcuda.so']);
  const cudart = libs.find(['libcudart.so', 'libcudart.so.13', 'libcudart.so.12', 'libcudart.so.11.0']);
  const hints = profile?.accelerators;
  const moduleKey = Object.keys(hints?.dlaByModule ?? {}).find((k) =>
    ctx.compatible.some((c) => c.value.startsWith(k)),
  );
  const moduleFact = moduleKey ? ctx.compatible.find((c) => c.value.startsWith(moduleKey)) : undefined;
  const dlaNodes = fs.list('/dev').filter((n) => /^nvhost-(ctrl-)?nvdla\d$/.test(n));
  let dlaCount: Claim<number>;
  if (dlaNodes.length > 0)
    dlaCount = {
      value: new Set(dlaNodes.map((n) => n.slice(-1))).size,
      evidence: dlaNodes.map((n) => fs.node(`/dev/${n}`)),
    };
  else if (moduleKey && moduleFact && profile)
    dlaCount = {
      value: hints!.dlaByModule![moduleKey]!,
      evidence: [moduleFact.evidence, table(profile, `dla ${moduleKey}`)],
    };
  else
    dlaCount = {
      value: null,
      evidence: [
        { kind: 'missing', path: '/dev/nvhost-nvdla0', detail: 'no DLA node and module not in the table' },
      ],
    };
  const moduleName = moduleKey ? hints?.moduleNames?.[moduleKey] : undefined;
  const l4t = tegra.fact;
  const jetpack = l4t ? jetpackForL4t(l4t.value) : null;
  return {
    kind: 'nvidia-gpu',
    name:
      moduleName && moduleFact && profile
        ? {
            value: `${moduleName} Ampere GPU`,
            evidence: [moduleFact.evidence, table(profile, `module ${moduleKey}`)],
          }
        : { value: null, evidence: evidence.length ? evidence : [tegra.evidence] },
    computeCapability:
      hints?.cudaComputeCapability && profile
        ? {
            value: hints.cudaComputeCapability,
            evidence: [table(profile, 'cudaComputeCapability', 'GA10B (Tegra234)')],
          }
        : {
            value: null,
            evidence: [
              {
                kind: 'missing',
                path: '/dev/nvidia0',
                detail: 'a discrete GPU reports its compute capability only through the driver API',
              },
            ],
          },
    l4tRelease: l4t
      ? { value: l4t.value, evidence: [l4t.evidence] }
      : { value: null, evidence: [tegra.evidence] },
    jetpack:
      jetpack && l4t
        ? {
            value: jetpack,
            evidence: [l4t.evidence, { kind: 'table', key: `L4T ${l4t.value}`, profile: 'jetson-orin' }],
          }
        : { value: null, evidence: [tegra.evidence] },
    dlaCount,
    deviceNodes: nodes,
    libraries: [...cudaLibs, ...cudart],
    evidence: [...evidence, ...libEvidence(fs, [...cudaLibs, ...cudart])],
  };
}

const DRM_DRIVER_VENDORS: Record<string, GpuVendor> = {
  msm: 'qualcomm-adreno',
  msm_drm: 'qualcomm-adreno',
  v3d: 'broadcom-v3d',
  panfrost: 'arm-mali',
  panthor: 'arm-mali',
  mali: 'arm-mali',
  pvrsrvkm: 'imagination',
  powervr: 'imagination',
};

export function probeGpu(ctx: AcceleratorContext, excludeNodes: readonly string[]): GpuInfo | null {
  const { fs, libs, profile } = ctx;
  const renders = fs
    .list('/dev/dri')
    .filter((n) => /^renderD\d+$/.test(n))
    .map((n) => `/dev/dri/${n}`)
    .filter((p) => !excludeNodes.includes(p));
  const special = presentNodes(fs, ['/dev/mali0', '/dev/kgsl-3d0']);
  if (renders.length === 0 && special.nodes.length === 0) return null;
  const evidence: Evidence[] = [...special.evidence, ...renders.map((p) => fs.node(p))];

  let vendor: GpuVendor = 'unknown';
  let driverName: string | null = null;
  for (const p of renders) {
    const uevent = fs.read(`/sys/class/drm/${p.slice(9)}/device/uevent`);
    const m = uevent.ok ? /^DRIVER=(\S+)$/m.exec(uevent.text) : null;
    if (m) {
      driverName = m[1]!;
      vendor = DRM_DRIVER_VENDORS[driverName] ?? 'unknown';
      evidence.push({ kind: 'file', path: uevent.path, value: m[0] });
      break;
    }
  }
  if (special.nodes.includes('/dev/mali0')) vendor = 'arm-mali';
  else if (special.nodes.includes('/dev/kgsl-3d0')) vendor = 'qualcomm-adreno';
  const byCompat = Object.entries(profile?.accelerators.gpuByCompatible ?? {}).find(([k]) =>
    ctx.compatible.some((c) => c.value === k),
  );
  const hint = profile?.accelerators.gpu ?? (byCompat ? byCompat[1] : undefined);
  if (vendor === 'unknown' && hint) vendor = hint.vendor;
  const name: Claim<string> =
    hint && hint.vendor === vendor && profile
      ? {
          value: hint.name,
          evidence: [table(profile, byCompat && !profile.accelerators.gpu ? `gpu ${byCompat[0]}` : 'gpu')],
        }
      : driverName
        ? { value: `${driverName} GPU`, evidence: evidence.slice(-1) }
        : { value: null, evidence: evidence.slice(0, 1) };
  const opencl = [
    ...libs.find(['libOpenCL.so.1', 'libOpenCL.so']),
    ...(vendor === 'arm-mali' ? libs.match(/^libmali.*\.so(\.\d+)*$/) : []),
  ];
  const vulkan = libs.find(['libvulkan.so.1', 'libvulkan.so']);
  return {
    kind: 'gpu',
    vendor,
    name,
    openclLibraries: opencl,
    vulkanLibraries: vulkan,
    deviceNodes: [...special.nodes, ...renders],
    libraries: [...opencl, ...vulkan],
    evidence: [...evidence, ...libEvidence(fs, [...opencl, ...vulkan])],
  };
}

export function probeSpacemitAi(ctx: AcceleratorContext): SpacemitAiInfo | null {
  const { nodes, evidence } = presentNodes(ctx.fs, [
    '/dev/tcm',
    '/dev/ai_dma',
    '/dev/aidma_list',
    '/proc/set_ai_thread',
  ]);
  if (nodes.length === 0) return null;
  const gate = ctx.fs.node('/proc/set_ai_thread');
  return {
    kind: 'spacemit-ai',
    aiThreadGate: { value: gate.present, evidence: [gate] },
    deviceNodes: nodes,
    libraries: ctx.libs.find(['libspacemit_ep.so', 'libspert.so']),
    evidence,
  };
}

export function probeAccelerators(ctx: AcceleratorContext): AcceleratorInfo[] {
  const out: AcceleratorInfo[] = [];
  const hexagon = probeHexagon(ctx);
  if (hexagon) out.push(hexagon);
  const rknpu = probeRknpu(ctx);
  if (rknpu) out.push(rknpu);
  const nvidia = probeNvidia(ctx);
  if (nvidia) out.push(nvidia);
  // On Jetson the GPU is the NVIDIA one; on Rockchip the NPU's DRM node is not a GPU.
  if (!nvidia || nvidia.deviceNodes.some((n) => n.startsWith('/dev/nvidia'))) {
    const gpu = probeGpu(ctx, rknpu?.deviceNode.value ? [rknpu.deviceNode.value] : []);
    if (gpu) out.push(gpu);
  }
  const ai = probeSpacemitAi(ctx);
  if (ai) out.push(ai);
  return out;
}
