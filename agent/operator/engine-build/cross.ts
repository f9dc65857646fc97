import type { Capabilities, CpuArchitecture } from '../../../lib/capabilities.js';
import { MnnEdgeError } from '../../../lib/errors.js';

// Building MNN on an x86-64 machine for a board: only the compilers change. The spec itself (kernels, backends,
// KleidiAI) comes from the board's capabilities exactly as a build on the board would, so a cross-built prefix is
// the one the board would have built for itself.

export const CROSS_TARGETS = ['aarch64-linux-gnu', 'riscv64-linux-gnu'] as const;
export type CrossTarget = (typeof CROSS_TARGETS)[number];

export interface CrossToolchain {
  target: CrossTarget;
  /** CMAKE_SYSTEM_PROCESSOR, and the architecture the board's capabilities must report. */
  processor: Extract<CpuArchitecture, 'aarch64' | 'riscv64'>;
  cc: string;
  cxx: string;
  /** Clang's --target, for a compiler that builds for several architectures. */
  compilerTarget: string | null;
  /** The cross sysroot: the target's C library headers and libraries. */
  sysroot: string;
  /** Debian packages that provide the compilers and the sysroot. */
  packages: string[];
  reason: string;
}

const TOOLCHAINS: Record<CrossTarget, Omit<CrossToolchain, 'reason'>> = {
  'aarch64-linux-gnu': {
    target: 'aarch64-linux-gnu',
    processor: 'aarch64',
    cc: 'aarch64-linux-gnu-gcc',
    cxx: 'aarch64-linux-gnu-g++',
    compilerTarget: null,
    sysroot: '/usr/aarch64-linux-gnu',
    packages: ['g++-aarch64-linux-gnu'],
  },
  // GCC 12 has no riscv_vector.h and clang 16 lacks the rounding-mode intrinsics MNN's RVV kernels call
  // (__riscv_vfcvt_x_f_v_i32m4_rm): clang-19 is the first Debian compiler that builds them. The no-V build
  // uses it too, so both riscv64 prefixes come from one compiler.
  'riscv64-linux-gnu': {
    target: 'riscv64-linux-gnu',
    processor: 'riscv64',
    cc: 'clang-19',
    cxx: 'clang++-19',
    compilerTarget: 'riscv64-linux-gnu',
    sysroot: '/usr/riscv64-linux-gnu',
    packages: ['clang-19', 'g++-riscv64-linux-gnu'],
  },
};

export function isCrossTarget(text: string): text is CrossTarget {
  return (CROSS_TARGETS as readonly string[]).includes(text);
}

/** The toolchain for `target` without a board (building only our addons against an existing cross prefix). */
export function toolchainOf(target: CrossTarget): CrossToolchain {
  const t = TOOLCHAINS[target];
  return { ...t, reason: `Toolchain: ${t.cxx} for ${target}` };
}

/** The toolchain for `target`; the board's capabilities must be of that architecture. */
export function crossToolchain(target: CrossTarget, caps: Capabilities): CrossToolchain {
  const t = TOOLCHAINS[target];
  const arch = caps.cpu.architecture.value;
  if (arch !== t.processor) {
    throw new MnnEdgeError(
      'ETARGET',
      `--target ${target} builds for ${t.processor}, but the board's capabilities (from ${caps.root}) say ${arch ?? 'unknown architecture'}; pass --root with the ${t.processor} board's root or capture`,
    );
  }
  return {
    ...t,
    reason: `Toolchain: cross-built for ${target} with ${t.cxx}${t.compilerTarget ? ` --target=${t.compilerTarget}` : ''} and the sysroot ${t.sysroot} (Debian ${t.packages.join(', ')}); every option above is the board's own`,
  };
}

/** The CMake toolchain file `mnn-edge engine build --target` writes next to the build directory. */
export function toolchainFileText(t: CrossToolchain): string {
  const lines = [
    `# Written by mnn-edge engine build --target ${t.target}: the target's compilers, its headers and`,
    '# libraries from the cross sysroot, programs from the build machine.',
    'set(CMAKE_SYSTEM_NAME Linux)',
    `set(CMAKE_SYSTEM_PROCESSOR ${t.processor})`,
    `set(CMAKE_C_COMPILER ${t.cc})`,
    `set(CMAKE_CXX_COMPILER ${t.cxx})`,
    ...(t.compilerTarget
      ? [
          `set(CMAKE_C_COMPILER_TARGET ${t.compilerTarget})`,
          `set(CMAKE_CXX_COMPILER_TARGET ${t.compilerTarget})`,
        ]
      : []),
    `set(CMAKE_FIND_ROOT_PATH ${t.sysroot})`,
    'set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)',
    'set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)',
    'set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)',
    'set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)',
  ];
  return lines.join('\n') + '\n';
}
