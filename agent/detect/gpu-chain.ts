import type {
  BackendAvailability,
  BackendStep,
  DeviceKind,
  Evidence,
  GpuInfo,
  NvidiaGpuInfo,
  StepStatus,
} from '../../lib/capabilities.js';
import type { LibraryFinder } from './libraries.js';
import type { RootFs } from './root-fs.js';

// The evidence chain for MNN's Vulkan and OpenCL backends, as far as files can tell: a device node, a driver
// registration (ICD), the loader under the exact name MNN dlopens, and whether the registered driver is a GPU or
// a software/CPU device. The engine adds the last two links (compiled in, init probe) after it has been asked.
// "Compiled in" and "initialises here" are different facts with different fixes, so they stay separate steps.

export type GpuApi = 'vulkan' | 'opencl';

/** Variables that redirect the loaders to other driver registrations (read from the agent's environment). */
export interface GpuLoaderEnv {
  VK_ICD_FILENAMES?: string | undefined;
  VK_DRIVER_FILES?: string | undefined;
  OCL_ICD_VENDORS?: string | undefined;
  OPENCL_VENDOR_PATH?: string | undefined;
}

export const VULKAN_ICD_DIRS = [
  '/etc/vulkan/icd.d',
  '/usr/local/share/vulkan/icd.d',
  '/usr/share/vulkan/icd.d',
];
export const OPENCL_VENDOR_DIR = '/etc/OpenCL/vendors';

/** MNN 3.x's Vulkan wrapper dlopens exactly this name (vulkan_wrapper.cpp); the .so.1 alone is not enough. */
export const MNN_VULKAN_LOADER = 'libvulkan.so';
/** MNN's OpenCL wrapper on Linux tries these, in order (OpenCLWrapper.cpp); bare names go through ld.so. */
export const MNN_OPENCL_LOADERS = [
  '/usr/lib/libOpenCL.so',
  '/usr/local/lib/libOpenCL.so',
  '/usr/local/lib/libpocl.so',
  '/usr/lib64/libOpenCL.so',
  '/usr/lib32/libOpenCL.so',
  'libOpenCL.so',
];

interface DriverKind {
  /** Human name of the driver. */
  name: string;
  kind: DeviceKind;
  /** Device nodes a hardware driver needs (any one); empty for software drivers. */
  nodes: RegExp[];
}

const DRI = /^\/dev\/dri\/renderD\d+$/;

// Which driver a registration's library is. Software devices run on the CPU (Mesa's lavapipe/llvmpipe, pocl),
// so they are usable but rank after MNN's own CPU backend; OpenCL in MNN accepts only GPU-typed devices.
const VULKAN_DRIVERS: Array<[RegExp, DriverKind]> = [
  [/libvulkan_lvp\.so/, { name: 'lavapipe (Mesa, llvmpipe on the CPU)', kind: 'software', nodes: [] }],
  [/libvulkan_intel(_hasvk)?\.so/, { name: 'Intel ANV (Mesa)', kind: 'gpu', nodes: [DRI] }],
  [/libvulkan_radeon\.so/, { name: 'AMD RADV (Mesa)', kind: 'gpu', nodes: [DRI] }],
  [
    /libvulkan_freedreno\.so/,
    { name: 'Adreno Turnip (Mesa)', kind: 'gpu', nodes: [DRI, /^\/dev\/kgsl-3d0$/] },
  ],
  [/libvulkan_panfrost\.so/, { name: 'Mali PanVK (Mesa)', kind: 'gpu', nodes: [DRI] }],
  [/libvulkan_broadcom\.so/, { name: 'Broadcom V3DV (Mesa)', kind: 'gpu', nodes: [DRI] }],
  [/libvulkan_powervr_mesa\.so/, { name: 'PowerVR (Mesa)', kind: 'gpu', nodes: [DRI] }],
  [/libvulkan_virtio\.so/, { name: 'Venus (virtio-gpu)', kind: 'gpu', nodes: [DRI] }],
  [/libmali.*\.so|libGLES_mali\.so/, { name: 'Arm Mali', kind: 'gpu', nodes: [/^\/dev\/mali0$/, DRI] }],
  [
    /libvulkan_adreno\.so|libvulkan_qcom/,
    { name: 'Qualcomm Adreno', kind: 'gpu', nodes: [/^\/dev\/kgsl-3d0$/] },
  ],
  [
    /libGLX_nvidia\.so|libnvidia/,
    { name: 'NVIDIA', kind: 'gpu', nodes: [/^\/dev\/nvidia\d+$/, /^\/dev\/nvgpu/] },
  ],
];

const OPENCL_DRIVERS: Array<[RegExp, DriverKind]> = [
  [/libpocl\.so/, { name: 'pocl (Portable Computing Language, CPU device)', kind: 'software', nodes: [] }],
  [/libintelocl\.so/, { name: 'Intel CPU runtime', kind: 'software', nodes: [] }],
  [/libmali.*\.so|libGLES_mali\.so/, { name: 'Arm Mali', kind: 'gpu', nodes: [/^\/dev\/mali0$/, DRI] }],
  [
    /libOpenCL_adreno\.so|libOpenCL\.so\.adreno|adreno/i,
    { name: 'Qualcomm Adreno', kind: 'gpu', nodes: [/^\/dev\/kgsl-3d0$/] },
  ],
  [/libRusticlOpenCL\.so/, { name: 'Mesa rusticl', kind: 'gpu', nodes: [DRI] }],
  [/libMesaOpenCL\.so/, { name: 'Mesa Clover', kind: 'gpu', nodes: [DRI] }],
  [/libigdrcl\.so/, { name: 'Intel compute runtime', kind: 'gpu', nodes: [DRI] }],
  [/libamdocl/, { name: 'AMD ROCm', kind: 'gpu', nodes: [DRI, /^\/dev\/kfd$/] }],
  [/libnvidia-opencl\.so/, { name: 'NVIDIA', kind: 'gpu', nodes: [/^\/dev\/nvidia\d+$/, /^\/dev\/nvgpu/] }],
  [/libPVROCL\.so/, { name: 'PowerVR', kind: 'gpu', nodes: [DRI] }],
];

function driverOf(api: GpuApi, library: string): DriverKind {
  const table = api === 'vulkan' ? VULKAN_DRIVERS : OPENCL_DRIVERS;
  const hit = table.find(([re]) => re.test(library));
  return hit ? hit[1] : { name: library.split('/').pop() ?? library, kind: 'unknown', nodes: [] };
}

/** One driver registration: the file that registers it and the library it names. */
export interface Registration {
  file: string;
  library: string;
  /** Where the library was found on the board; null when it is not there. */
  found: string | null;
  driver: DriverKind;
}

function locate(fs: RootFs, libs: LibraryFinder, library: string): string | null {
  if (library.startsWith('/')) return fs.node(library).present ? library : null;
  return libs.find([library])[0] ?? null;
}

function splitList(value: string): string[] {
  return value
    .split(':')
    .map((s) => s.trim())
    .filter(Boolean);
}

function vulkanRegistrations(
  fs: RootFs,
  libs: LibraryFinder,
  env: GpuLoaderEnv,
): { regs: Registration[]; source: string; problems: Evidence[] } {
  const override = env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES;
  const varName = env.VK_DRIVER_FILES !== undefined ? 'VK_DRIVER_FILES' : 'VK_ICD_FILENAMES';
  const files =
    override !== undefined
      ? splitList(override)
      : VULKAN_ICD_DIRS.flatMap((d) =>
          fs
            .list(d)
            .filter((n) => n.endsWith('.json'))
            .map((n) => `${d}/${n}`),
        );
  const regs: Registration[] = [];
  const problems: Evidence[] = [];
  for (const file of files) {
    const r = fs.read(file);
    if (!r.ok) {
      problems.push(r.evidence);
      continue;
    }
    let library: unknown;
    try {
      library = (JSON.parse(r.text) as { ICD?: { library_path?: unknown } }).ICD?.library_path;
    } catch {
      problems.push({ kind: 'missing', path: file, detail: 'not JSON' });
      continue;
    }
    if (typeof library !== 'string' || library.length === 0) {
      problems.push({ kind: 'missing', path: file, detail: 'no ICD.library_path' });
      continue;
    }
    regs.push({ file, library, found: locate(fs, libs, library), driver: driverOf('vulkan', library) });
  }
  return {
    regs,
    source: override !== undefined ? `${varName}=${override}` : VULKAN_ICD_DIRS.join(', '),
    problems,
  };
}

function openclRegistrations(
  fs: RootFs,
  libs: LibraryFinder,
  env: GpuLoaderEnv,
): { regs: Registration[]; source: string; problems: Evidence[] } {
  const override = env.OCL_ICD_VENDORS ?? env.OPENCL_VENDOR_PATH;
  const varName = env.OCL_ICD_VENDORS !== undefined ? 'OCL_ICD_VENDORS' : 'OPENCL_VENDOR_PATH';
  // ocl-icd takes a directory or a single .icd file here; the Khronos loader a directory.
  const target = override ?? OPENCL_VENDOR_DIR;
  const files = target.endsWith('.icd')
    ? [target]
    : fs
        .list(target)
        .filter((n) => n.endsWith('.icd'))
        .map((n) => `${target.replace(/\/$/, '')}/${n}`);
  const regs: Registration[] = [];
  const problems: Evidence[] = [];
  if (override !== undefined && files.length === 0)
    problems.push({ kind: 'missing', path: target, detail: `${varName} names no .icd file` });
  for (const file of files) {
    const r = fs.read(file);
    if (!r.ok) {
      problems.push(r.evidence);
      continue;
    }
    const library = r.text.trim().split('\n')[0]?.trim() ?? '';
    if (!library) {
      problems.push({ kind: 'missing', path: file, detail: 'empty vendor file' });
      continue;
    }
    regs.push({ file, library, found: locate(fs, libs, library), driver: driverOf('opencl', library) });
  }
  return { regs, source: override !== undefined ? `${varName}=${override}` : OPENCL_VENDOR_DIR, problems };
}

const step = (
  name: BackendStep['step'],
  status: StepStatus,
  detail: string,
  evidence: Evidence[] = [],
): BackendStep => ({ step: name, status, detail, evidence });

/** GPU device nodes on the board, minus those another accelerator owns. */
function gpuNodes(fs: RootFs, gpu: GpuInfo | undefined, nvidia: NvidiaGpuInfo | undefined): string[] {
  const nodes = new Set<string>(gpu?.deviceNodes ?? []);
  for (const n of nvidia?.deviceNodes ?? []) nodes.add(n);
  for (const n of ['/dev/kfd']) if (fs.node(n).present) nodes.add(n);
  return [...nodes];
}

/** The loader under the exact name MNN dlopens (the versioned .so.1 alone does not count). */
function loaderStep(api: GpuApi, fs: RootFs, libs: LibraryFinder): BackendStep {
  if (api === 'vulkan') {
    const unversioned = libs.find([MNN_VULKAN_LOADER]);
    const versioned = libs.find(['libvulkan.so.1']);
    if (unversioned.length > 0)
      return step('loader', 'ok', `MNN loads ${MNN_VULKAN_LOADER}: ${unversioned[0]}`, [
        fs.node(unversioned[0]!),
      ]);
    else if (versioned.length > 0)
      return step(
        'loader',
        'fail',
        `Vulkan loader present as libvulkan.so.1 only (${versioned[0]}); MNN loads ${MNN_VULKAN_LOADER} — install the loader's development symlink (libvulkan-dev)`,
        [fs.node(versioned[0]!), { kind: 'missing', path: `${versioned[0]!.replace(/\.1$/, '')}` }],
      );
    else
      return step(
        'loader',
        'fail',
        `no Vulkan loader: MNN loads ${MNN_VULKAN_LOADER} (libvulkan1 + libvulkan-dev)`,
        [{ kind: 'missing', path: '/usr/lib/libvulkan.so' }],
      );
  } else {
    const hit = MNN_OPENCL_LOADERS.map((n) =>
      n.startsWith('/') ? (fs.node(n).present ? n : null) : (libs.find([n])[0] ?? null),
    ).find((p): p is string => p !== null);
    const versioned = libs.find(['libOpenCL.so.1']);
    if (hit) return step('loader', 'ok', `MNN loads ${hit}`, [fs.node(hit)]);
    else if (versioned.length > 0)
      return step(
        'loader',
        'fail',
        `OpenCL loader present as libOpenCL.so.1 only (${versioned[0]}); MNN loads libOpenCL.so — install the loader's development symlink (ocl-icd-opencl-dev)`,
        [fs.node(versioned[0]!)],
      );
    else
      return step('loader', 'fail', `no OpenCL library: MNN loads ${MNN_OPENCL_LOADERS.join(', ')}`, [
        { kind: 'missing', path: '/usr/lib/libOpenCL.so' },
      ]);
  }
}

export interface ChainInput {
  fs: RootFs;
  libs: LibraryFinder;
  env: GpuLoaderEnv;
  gpu: GpuInfo | undefined;
  nvidia: NvidiaGpuInfo | undefined;
}

/** What the board shows for one API, worked out once and read by each step of the chain. */
function chainFacts(api: GpuApi, input: ChainInput) {
  const { fs, libs, env, gpu, nvidia } = input;
  const nodes = gpuNodes(fs, gpu, nvidia);
  const { regs, source, problems } =
    api === 'vulkan' ? vulkanRegistrations(fs, libs, env) : openclRegistrations(fs, libs, env);
  const installed = regs.filter((r) => r.found !== null);
  // A hardware driver counts only with its device node; a software driver needs none.
  const serving = installed.filter(
    (r) =>
      r.driver.kind !== 'gpu' ||
      r.driver.nodes.length === 0 ||
      nodes.some((n) => r.driver.nodes.some((re) => re.test(n))),
  );
  const overridden =
    (api === 'vulkan'
      ? (env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES)
      : (env.OCL_ICD_VENDORS ?? env.OPENCL_VENDOR_PATH)) !== undefined;
  return {
    api,
    fs,
    env,
    nvidia,
    label: api === 'vulkan' ? 'Vulkan' : 'OpenCL',
    gpuName: gpu?.name.value ?? (gpu ? `${gpu.vendor} GPU` : 'GPU'),
    nodes,
    regs,
    source,
    problems,
    installed,
    serving,
    hardware: serving.filter((r) => r.driver.kind !== 'software'),
    software: serving.filter((r) => r.driver.kind === 'software'),
    overridden,
  };
}
type ChainFacts = ReturnType<typeof chainFacts>;

/** 1. The GPU's device node (a software driver needs none). */
function deviceNodeStep(f: ChainFacts): BackendStep {
  const { fs, nodes, software, source, label } = f;
  if (nodes.length > 0)
    return step(
      'device-node',
      'ok',
      `${f.gpuName} at ${nodes.join(', ')}`,
      nodes.map((n) => fs.node(n)),
    );
  if (software.length > 0)
    return step(
      'device-node',
      'skip',
      `no GPU device node (/dev/dri/renderD*, /dev/mali0, /dev/kgsl-3d0); the software driver ${software[0]!.driver.name} needs none`,
    );
  if (f.overridden)
    return step(
      'device-node',
      'skip',
      `no GPU device node; which driver is loaded is decided by ${source}, checked next`,
      [fs.node('/dev/dri')],
    );
  return step(
    'device-node',
    'fail',
    f.nvidia
      ? `the NVIDIA GPU is served by the cuda backend; no other GPU node (/dev/dri/renderD*) and no software ${label} driver`
      : `no GPU device node (/dev/dri/renderD*, /dev/mali0, /dev/kgsl-3d0) and no software ${label} driver registered`,
    [fs.node('/dev/dri'), fs.node('/dev/mali0'), fs.node('/dev/kgsl-3d0')],
  );
}

/** 2. Driver registration (ICD / vendor file). */
function registrationStep(f: ChainFacts): BackendStep {
  const { api, env, regs, source, problems, installed, serving, nodes, label } = f;
  const regEvidence: Evidence[] = regs.map(
    (r): Evidence => ({
      kind: 'file',
      path: r.file,
      value: `${r.library}${r.found ? ` → ${r.found}` : ' (library not found)'}`,
    }),
  );
  if (serving.length > 0)
    return step(
      'icd',
      'ok',
      `${label} driver${serving.length > 1 ? 's' : ''} registered in ${source}: ${serving.map((r) => `${r.driver.name} (${r.file.split('/').pop()})`).join(', ')}`,
      regEvidence,
    );
  const missingLibs = regs.filter((r) => r.found === null);
  const unserved = installed.filter((r) => !serving.includes(r));
  const why =
    regs.length === 0
      ? problems.length > 0 &&
        (env.VK_ICD_FILENAMES ?? env.VK_DRIVER_FILES ?? env.OCL_ICD_VENDORS) !== undefined
        ? `${source} points at nothing usable (${problems.map((p) => ('path' in p ? p.path : '')).join(', ')})`
        : `no ${label} driver registered (${source} ${api === 'vulkan' ? 'hold no *.json ICD' : 'holds no *.icd file'})`
      : unserved.length > 0
        ? `${label} driver${unserved.length > 1 ? 's' : ''} ${unserved.map((r) => r.driver.name).join(', ')} registered but ${unserved.length > 1 ? 'their' : 'its'} device node is absent`
        : `${label} driver registration${missingLibs.length > 1 ? 's' : ''} ${missingLibs.map((r) => `${r.file} names ${r.library}`).join(', ')}, which is not installed`;
  // With a GPU node but no registration at all, the classic problem is the missing userspace: say "library".
  return step(
    'icd',
    'fail',
    nodes.length > 0 && regs.length === 0
      ? `${f.gpuName} present (${nodes.join(', ')}) but no ${label} library: ${why}`
      : why,
    [...regEvidence, ...problems],
  );
}

/** 4. Whether the driver gives a GPU or a software (CPU) device, and what MNN makes of that. */
function deviceKindStep(f: ChainFacts): { step: BackendStep; kind: DeviceKind } {
  const { api, hardware, software } = f;
  if (hardware.length > 0) {
    const kind: DeviceKind = hardware.some((r) => r.driver.kind === 'gpu') ? 'gpu' : 'unknown';
    return {
      kind,
      step: step('device-kind', 'ok', `GPU driver ${hardware.map((r) => r.driver.name).join(', ')}`),
    };
  }
  if (software.length === 0)
    return { kind: 'unknown', step: step('device-kind', 'unchecked', 'no driver to ask') };
  const names = software.map((r) => r.driver.name).join(', ');
  if (api === 'opencl')
    return {
      kind: 'software',
      step: step(
        'device-kind',
        'fail',
        `no OpenCL GPU device: the only ${software.length > 1 ? 'drivers' : 'driver'} registered (${names}) offer${software.length > 1 ? '' : 's'} a CPU device, and MNN's OpenCL backend asks for CL_DEVICE_TYPE_GPU`,
      ),
    };
  return {
    kind: 'software',
    step: step(
      'device-kind',
      'ok',
      `software device: ${names} runs on the CPU, so it ranks after MNN's CPU backend`,
    ),
  };
}

/** The board-side chain for one API; compiled-in and init-probe stay `unchecked` until the engine answers. */
export function gpuBackendChain(api: GpuApi, input: ChainInput): BackendAvailability {
  const facts = chainFacts(api, input);
  const kind = deviceKindStep(facts);
  const steps: BackendStep[] = [
    deviceNodeStep(facts),
    registrationStep(facts),
    // 3. The loader under the name MNN dlopens.
    loaderStep(api, input.fs, input.libs),
    kind.step,
    step('compiled-in', 'unchecked', 'the installed MNN was not asked'),
    step('init-probe', 'unchecked', 'no engine host probed this backend'),
  ];
  return summarise(api, steps, kind.kind);
}

/** usable and reasons from the steps: the first failing step is the reason, the rest follow as context. */
export function summarise(
  backend: GpuApi,
  steps: BackendStep[],
  deviceKind: DeviceKind,
): BackendAvailability {
  const failed = steps.filter((s) => s.status === 'fail');
  const compiled = steps.find((s) => s.step === 'compiled-in');
  if (failed.length === 0) {
    // The strongest evidence first: a graph ran, then the device, then the files that make it possible.
    const okSteps = steps
      .filter((s) => s.status === 'ok')
      .reverse()
      .map((s) => s.detail);
    return {
      backend,
      usable: true,
      reasons: okSteps.length ? okSteps : ['no evidence against it'],
      steps,
      deviceKind,
    };
  }
  const first = failed[0]!;
  const prefix =
    compiled?.status === 'ok' && first.step !== 'compiled-in' && first.step !== 'init-probe'
      ? 'compiled in, but '
      : '';
  return {
    backend,
    usable: false,
    reasons: [`${prefix}${first.detail}`, ...failed.slice(1).map((s) => s.detail)],
    steps,
    deviceKind,
  };
}
