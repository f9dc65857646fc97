import type {
  Capabilities,
  GpuInfo,
  HexagonInfo,
  NvidiaGpuInfo,
  RknpuInfo,
} from '../../../lib/capabilities.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { type CrossTarget, type CrossToolchain, crossToolchain } from './cross.js';

// Which MNN CMake options a board gets when `mnn-edge engine build` compiles MNN on the board itself (Debian on
// a Rock 5B, JetPack on a Jetson, Bianbu on a K1): a pure function of the detected capabilities and the vendor
// SDKs found on the machine, so every board fixture can check it. The Yocto `mnn` recipe makes the same
// choices through PACKAGECONFIG (docs/YOCTO.md).

/** The MNN commit the engine addon is built and tested against (3.6.1 plus 87 commits on master). */
export const PINNED_MNN_COMMIT = '4d40bdbd7efb73a58383bb5da867a6f41eb1776e';
export const MNN_REPOSITORY = 'https://github.com/alibaba/MNN.git';

/** Vendor toolkits found on this machine (absolute directories), found by sdk.ts; absent = not found. */
export interface BuildHost {
  /** QAIRT/QNN SDK: the directory with include/QNN. */
  qnnSdkRoot?: string;
  /** Hexagon SDK: the directory with build/cmake/hexagon_fun.cmake. */
  hexagonSdkRoot?: string;
  /** CUDA toolkit: the directory with bin/nvcc. */
  cudaRoot?: string;
  /** KleidiAI source tree (the directory with kai/): MNN's CMake would download it otherwise. */
  kleidiaiSrc?: string;
  /** Where each looked, for the message when one is missing. */
  searched?: { qnn: string[]; hexagon: string[]; cuda: string[] };
}

/** Backends a user may force on or off (a CPU-only development host with lavapipe and pocl, say). */
export const SELECTABLE_BACKENDS = ['opencl', 'vulkan', 'cuda', 'qnn', 'hexagon'] as const;
export type SelectableBackend = (typeof SELECTABLE_BACKENDS)[number];

export interface BackendChoice {
  with?: readonly SelectableBackend[];
  without?: readonly SelectableBackend[];
  /** MNN's own tools built and installed into the prefix beside the library (`--with converter`). */
  tools?: readonly SelectableTool[];
}

/** MNN tools a user may add: `converter` is MNNConvert (ONNX/TFLite/Caffe/TorchScript → .mnn, and the int4/int8
 *  weight quantisation), which the wake-word generator and the int4 benchmark model need. */
export const SELECTABLE_TOOLS = ['converter'] as const;
export type SelectableTool = (typeof SELECTABLE_TOOLS)[number];

/** What a build of MNN for this board is: its CMake options, backends and toolchain, with the reasons. Called a
 *  spec, not a plan: "plan" is the placement's word (agent/plan/). */
export interface EngineBuildSpec {
  /** -D options for MNN's CMake, in a stable order. */
  cmake: [name: string, value: string][];
  /** MNN backends compiled in besides the CPU. */
  backends: string[];
  /** One line per decision: what was chosen and the evidence for it. */
  reasons: string[];
  /** What the board still needs at run time, or a backend left out for a missing toolkit. */
  warnings: string[];
  /** Set when the build machine is not the board: the compilers that build for it. Nothing else differs. */
  toolchain: CrossToolchain | null;
  /** MNN tools built and installed into the prefix besides llm_demo and llm_bench. */
  tools: SelectableTool[];
}

/** Options every build has: one libMNN.so with Express, the LLM engine (omni, audio, image codecs), quantised
 *  weights and the fused attention op the models use; plus llm_demo and llm_bench. */
export const BASE: [string, string][] = [
  ['CMAKE_BUILD_TYPE', 'Release'],
  ['MNN_BUILD_SHARED_LIBS', 'ON'],
  ['MNN_SEP_BUILD', 'OFF'],
  ['MNN_BUILD_LLM', 'ON'],
  ['MNN_BUILD_LLM_OMNI', 'ON'],
  ['MNN_BUILD_AUDIO', 'ON'],
  ['MNN_BUILD_OPENCV', 'ON'],
  ['MNN_IMGCODECS', 'ON'],
  ['MNN_LOW_MEMORY', 'ON'],
  ['MNN_SUPPORT_TRANSFORMER_FUSE', 'ON'],
  ['MNN_LLM_BUILD_DEMO', 'ON'],
  ['MNN_BUILD_TOOLS', 'OFF'],
  ['MNN_BUILD_CONVERTER', 'OFF'],
  ['MNN_BUILD_TEST', 'OFF'],
  // Binaries are linked with the rpath they have once installed: llm_demo, llm_bench (and MNNConvert) are copied
  // into <prefix>/bin by hand (MNN's install rule leaves them out), and CMake's default build-tree rpath would
  // keep them loading libraries from the build directory, or failing once it is deleted.
  ['CMAKE_BUILD_WITH_INSTALL_RPATH', 'ON'],
  ['CMAKE_INSTALL_RPATH', '$ORIGIN/../lib'],
];

function accelerators<K extends Capabilities['accelerators'][number]['kind']>(caps: Capabilities, kind: K) {
  return caps.accelerators.filter((a) => a.kind === kind) as Extract<
    Capabilities['accelerators'][number],
    { kind: K }
  >[];
}

const base = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/** MNN dlopen()s the unversioned name; Debian-like systems ship it only in the -dev package. */
function unversionedWarning(kind: 'OpenCL' | 'Vulkan', found: string[], name: string, devPackage: string) {
  if (found.some((p) => base(p) === name)) return [];
  const have = found.length > 0 ? `only ${found.map(base).join(', ')} is installed` : 'no loader was found';
  return [
    `${kind}: MNN loads ${name} (unversioned) at run time and ${have}; install ${devPackage} or link ${name} to the loader, or the ${kind.toLowerCase()} backend stays unavailable`,
  ];
}

/** CMake keys each selectable backend sets. */
const BACKEND_KEYS: Record<SelectableBackend, string[]> = {
  opencl: ['MNN_OPENCL'],
  vulkan: ['MNN_VULKAN'],
  cuda: ['MNN_CUDA', 'CUDA_TOOLKIT_ROOT_DIR', 'CUDA_ARCHS'],
  qnn: ['MNN_QNN', 'QNN_SDK_ROOT'],
  hexagon: ['MNN_HEXAGON', 'HEXAGON_SDK_ROOT'],
};

/** What the spec gathers as each part of the board is looked at. */
export interface Decisions {
  cmake: Map<string, string>;
  backends: string[];
  reasons: string[];
  warnings: string[];
}

/** CPU kernels for the architecture and the extensions the CPU reports. */
function decideCpu(caps: Capabilities, d: Decisions): void {
  const { cmake, reasons, warnings } = d;
  const arch = caps.cpu.architecture.value;
  const f = caps.cpu.features;
  if (arch === 'aarch64') {
    const fp16 = f.fp16.value === true;
    cmake.set('MNN_ARM82', fp16 ? 'ON' : 'OFF');
    reasons.push(
      `CPU: aarch64, ${fp16 ? 'FP16 arithmetic (asimdhp): ARMv8.2 kernels' : 'no FP16: ARMv8.0 kernels only'}`,
    );
  } else if (arch === 'x86_64') {
    const avx512 = f.avx512f.value === true;
    cmake.set('MNN_AVX512', avx512 ? 'ON' : 'OFF');
    reasons.push(`CPU: x86_64 with AVX2 kernels${avx512 ? ' and AVX-512 (avx512f)' : ''}`);
  } else if (arch === 'riscv64') {
    const rvv = f.rvv.value === true;
    cmake.set('MNN_USE_RVV', rvv ? 'ON' : 'OFF');
    reasons.push(
      `CPU: riscv64, ${rvv ? 'RVV 1.0 vector kernels (-march=rv64gcv)' : 'no V extension: scalar kernels'}`,
    );
    if (rvv) cmake.set('MNN_RVV_MARCH', 'rv64gcv');
    if (f.ime2.value === true) {
      cmake.set('MNN_RVV_SPACEMIT_IME2', 'ON');
      reasons.push('CPU: SpacemiT IME2 matrix extension: MNN_RVV_SPACEMIT_IME2 kernels');
      warnings.push(
        "IME2 kernels need a compiler that knows SpacemiT's xsmtvdotii extension (the vendor GCC or Clang); a stock compiler fails on them",
      );
    } else if (f.ime.value === true) {
      reasons.push('CPU: SpacemiT IME (first generation): MNN has no kernels for it; RVV kernels are used');
    }
  } else {
    reasons.push(`CPU: ${arch ?? 'unknown architecture'}: MNN's generic kernels`);
  }
}

/** GPUs through OpenCL and Vulkan: MNN carries the API headers and loads the loader at run time. */
function decideGpuApis(caps: Capabilities, d: Decisions): void {
  const { cmake, backends, reasons, warnings } = d;
  const gpus = accelerators(caps, 'gpu') as GpuInfo[];
  const openclGpu = gpus.find((g) => g.vendor === 'arm-mali' || g.vendor === 'qualcomm-adreno');
  const openclLibs = gpus.flatMap((g) => g.openclLibraries);
  if (openclGpu || openclLibs.length > 0) {
    cmake.set('MNN_OPENCL', 'ON');
    backends.push('opencl');
    reasons.push(
      openclGpu
        ? `OpenCL: ${openclGpu.name.value ?? openclGpu.vendor} GPU (${openclGpu.vendor})`
        : `OpenCL: loader found (${openclLibs.join(', ')})`,
    );
    warnings.push(...unversionedWarning('OpenCL', openclLibs, 'libOpenCL.so', 'ocl-icd-opencl-dev'));
  }
  const vulkanLibs = gpus.flatMap((g) => g.vulkanLibraries);
  if (vulkanLibs.length > 0) {
    cmake.set('MNN_VULKAN', 'ON');
    backends.push('vulkan');
    reasons.push(`Vulkan: loader found (${vulkanLibs.join(', ')})`);
    warnings.push(...unversionedWarning('Vulkan', vulkanLibs, 'libvulkan.so', 'libvulkan-dev'));
  }
}

/** NVIDIA: CUDA for the board's compute capability, when the toolkit is on the build host. */
function decideCuda(caps: Capabilities, host: BuildHost, d: Decisions): void {
  const { cmake, backends, reasons, warnings } = d;
  for (const gpu of accelerators(caps, 'nvidia-gpu') as NvidiaGpuInfo[]) {
    const cc = gpu.computeCapability.value;
    if (!host.cudaRoot) {
      warnings.push(
        `CUDA: ${gpu.name.value ?? 'NVIDIA GPU'} found but no CUDA toolkit (bin/nvcc) in ${(host.searched?.cuda ?? []).join(', ') || 'the usual places'}; install JetPack's cuda-toolkit or set CUDA_HOME, the build goes on without CUDA`,
      );
      continue;
    }
    cmake.set('MNN_CUDA', 'ON');
    cmake.set('CUDA_TOOLKIT_ROOT_DIR', host.cudaRoot);
    if (cc) cmake.set('CUDA_ARCHS', cc);
    else
      warnings.push('CUDA: compute capability unknown; MNN compiles for the GPU it detects while building');
    backends.push('cuda');
    reasons.push(
      `CUDA: ${gpu.name.value ?? 'NVIDIA GPU'}, compute capability ${cc ?? 'unknown'}, toolkit ${host.cudaRoot}`,
    );
  }
}

/** Qualcomm Hexagon NPU: QNN (HTP) and MNN's own Hexagon backend, each with its SDK; RKNPU is only reported. */
function decideNpus(caps: Capabilities, host: BuildHost, d: Decisions): void {
  const { cmake, backends, reasons, warnings } = d;
  for (const npu of accelerators(caps, 'hexagon-htp') as HexagonInfo[]) {
    const htp = `Hexagon ${npu.arch.value ?? '(arch unknown)'}`;
    if (host.qnnSdkRoot) {
      cmake.set('MNN_QNN', 'ON');
      cmake.set('QNN_SDK_ROOT', host.qnnSdkRoot);
      backends.push('qnn');
      reasons.push(`QNN: ${htp} NPU, SDK ${host.qnnSdkRoot}`);
    } else {
      warnings.push(
        `QNN: ${htp} NPU found but no QAIRT/QNN SDK (include/QNN) in ${(host.searched?.qnn ?? []).join(', ') || 'the usual places'}; set QNN_SDK_ROOT, the build goes on without QNN`,
      );
    }
    const hexagonUsable = caps.backends.some((b) => b.backend === 'hexagon' && b.usable);
    if (hexagonUsable && host.hexagonSdkRoot) {
      cmake.set('MNN_HEXAGON', 'ON');
      cmake.set('HEXAGON_SDK_ROOT', host.hexagonSdkRoot);
      backends.push('hexagon');
      reasons.push(`Hexagon: ${htp}, SDK ${host.hexagonSdkRoot}`);
    } else if (hexagonUsable) {
      reasons.push(
        `Hexagon: ${htp} could run MNN's Hexagon backend, but no Hexagon SDK was found (set HEXAGON_SDK_ROOT)`,
      );
    }
  }

  for (const npu of accelerators(caps, 'rknpu') as RknpuInfo[]) {
    reasons.push(
      `RKNN: ${npu.cores.value ?? '?'}-core RKNPU (driver ${npu.driver.value ?? 'unknown'}); MNN_RKNN needs Rockchip's RKNN toolkit headers and is not chosen here`,
    );
  }
}

export function engineBuildSpec(
  caps: Capabilities,
  host: BuildHost,
  choice: BackendChoice = {},
  target?: CrossTarget,
): EngineBuildSpec {
  const toolchain = target === undefined ? null : crossToolchain(target, caps);
  const d: Decisions = { cmake: new Map<string, string>(BASE), backends: [], reasons: [], warnings: [] };
  decideCpu(caps, d);
  if (caps.cpu.architecture.value === 'aarch64') decideKleidiai(host, d);
  decideGpuApis(caps, d);
  decideCuda(caps, host, d);
  decideNpus(caps, host, d);
  return finishSpec(d, choice, host, toolchain);
}

/** The user's --with/--without and tools over the decisions, then the spec; a board's and the generic build's. */
export function finishSpec(
  d: Decisions,
  choice: BackendChoice,
  host: BuildHost,
  toolchain: CrossToolchain | null,
): EngineBuildSpec {
  applyChoice(choice, host, d.cmake, d.backends, d.reasons);
  const tools = applyTools(choice, d);
  // Keys a backend added go after the base ones, in the order they were decided.
  if (toolchain !== null) d.reasons.push(toolchain.reason);
  return {
    cmake: [...d.cmake.entries()],
    backends: d.backends,
    reasons: d.reasons,
    warnings: d.warnings,
    toolchain,
    tools,
  };
}

/** MNN's own tools asked for with --with (the converter), beside llm_demo and llm_bench. */
export function applyTools(choice: BackendChoice, d: Decisions): SelectableTool[] {
  const tools = [...new Set(choice.tools ?? [])];
  if (tools.includes('converter')) {
    d.cmake.set('MNN_BUILD_CONVERTER', 'ON');
    d.reasons.push(
      'converter: MNNConvert and libMNNConvertDeps.so, installed into the prefix (--with converter; about 17 more minutes on 2 cores)',
    );
  }
  return tools;
}

/** KleidiAI (Arm's micro-kernels): MNN's CMake downloads a release archive unless given a local tree, and a
 *  build machine or board without network must not depend on that. */
export function decideKleidiai(host: BuildHost, d: Decisions): void {
  if (host.kleidiaiSrc !== undefined) {
    d.cmake.set('MNN_KLEIDIAI', 'ON');
    d.cmake.set('KLEIDIAI_SRC_DIR', host.kleidiaiSrc);
    d.reasons.push(`KleidiAI: on, from the local source tree ${host.kleidiaiSrc} (nothing is downloaded)`);
  } else {
    d.cmake.set('MNN_KLEIDIAI', 'OFF');
    d.reasons.push(
      "KleidiAI: off (MNN's CMake would download it; give a local source tree with --kleidiai DIR or KLEIDIAI_SRC_DIR to build it in)",
    );
  }
}

/** --with / --without: the user's word over detection; a backend that needs a toolkit still needs it found. */
export function applyChoice(
  choice: BackendChoice,
  host: BuildHost,
  cmake: Map<string, string>,
  backends: string[],
  reasons: string[],
): void {
  for (const b of choice.without ?? []) {
    for (const key of BACKEND_KEYS[b]) cmake.delete(key);
    const at = backends.indexOf(b);
    if (at !== -1) backends.splice(at, 1);
    reasons.push(`${b}: left out (--without)`);
  }
  const toolkit: Partial<Record<SelectableBackend, [string, string | undefined, string]>> = {
    cuda: ['CUDA_TOOLKIT_ROOT_DIR', host.cudaRoot, 'a CUDA toolkit (CUDA_HOME)'],
    qnn: ['QNN_SDK_ROOT', host.qnnSdkRoot, 'the QAIRT/QNN SDK (QNN_SDK_ROOT)'],
    hexagon: ['HEXAGON_SDK_ROOT', host.hexagonSdkRoot, 'the Hexagon SDK (HEXAGON_SDK_ROOT)'],
  };
  for (const b of choice.with ?? []) {
    if (backends.includes(b)) continue;
    const needs = toolkit[b];
    if (needs !== undefined && needs[1] === undefined) {
      throw new MnnEdgeError('ENOTOOLKIT', `--with ${b} needs ${needs[2]}, which was not found`);
    }
    cmake.set(BACKEND_KEYS[b][0]!, 'ON');
    if (needs !== undefined) cmake.set(needs[0], needs[1]!);
    backends.push(b);
    reasons.push(`${b}: asked for (--with); detection did not find it usable on this board`);
  }
}

/** `cmake -S SRC -B BUILD` arguments of a spec; a cross spec also names its toolchain file. */
export function cmakeConfigureArgs(
  spec: EngineBuildSpec,
  src: string,
  build: string,
  prefix: string,
  toolchainFile?: string,
): string[] {
  return [
    '-S',
    src,
    '-B',
    build,
    `-DCMAKE_INSTALL_PREFIX=${prefix}`,
    ...(spec.toolchain !== null && toolchainFile !== undefined
      ? [`-DCMAKE_TOOLCHAIN_FILE=${toolchainFile}`]
      : []),
    ...spec.cmake.map(([k, v]) => `-D${k}=${v}`),
  ];
}
