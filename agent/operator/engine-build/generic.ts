import { MnnEdgeError } from '../../../lib/errors.js';
import { type CrossTarget, toolchainOf } from './cross.js';
import {
  BASE,
  type BackendChoice,
  type BuildHost,
  type Decisions,
  decideKleidiai,
  type EngineBuildSpec,
  finishSpec,
} from './spec.js';

// The generic engine: the MNN the `mnn-edge-engine` .deb ships for every board of an architecture, built without
// looking at any board (`mnn-edge engine build --target aarch64-linux-gnu --generic`). It must run on every CPU of
// the architecture and use a GPU wherever the board has a driver, so it holds only what MNN chooses at run time:
// - the ARMv8.2 fp16 kernels (MNN_ARM82) are compiled in but used only when the CPU reports fp16 arithmetic, and
//   MNN dispatches its sdot/i8mm/SME2 kernels on what the CPU reports too;
// - OpenCL and Vulkan link nothing: MNN dlopen()s libOpenCL.so / libvulkan.so when a model asks for the backend,
//   and a board without them keeps serving on the CPU (the engine's probe says which step failed);
// - toolkit backends (CUDA, QNN, Hexagon) need the board's vendor SDK and are left to a board's own build.
// riscv64 has no generic engine: MNN's RVV build has no run-time dispatch, and no riscv64 Node is published to
// package an addon for.

export const GENERIC_TARGETS: readonly CrossTarget[] = ['aarch64-linux-gnu'];

export function genericEngineSpec(
  target: CrossTarget,
  host: BuildHost,
  choice: BackendChoice = {},
): EngineBuildSpec {
  if (!GENERIC_TARGETS.includes(target)) {
    throw new MnnEdgeError(
      'ETARGET',
      `--generic builds the engine the Debian package ships, which exists for ${GENERIC_TARGETS.join(', ')} only; for ${target} pass --root with the board's root or capture`,
    );
  }
  const d: Decisions = { cmake: new Map<string, string>(BASE), backends: [], reasons: [], warnings: [] };
  d.cmake.set('MNN_ARM82', 'ON');
  d.reasons.push(
    'CPU: any aarch64; ARMv8.2 fp16 kernels built in, used only where the CPU reports fp16 (MNN chooses at run time)',
  );
  decideKleidiai(host, d);
  for (const [key, name, loader] of [
    ['MNN_OPENCL', 'opencl', 'libOpenCL.so'],
    ['MNN_VULKAN', 'vulkan', 'libvulkan.so'],
  ] as const) {
    d.cmake.set(key, 'ON');
    d.backends.push(name);
    d.reasons.push(
      `${name}: built in for any board (MNN dlopens ${loader} at run time; without it the backend is unavailable and the CPU serves)`,
    );
  }
  return finishSpec(d, choice, host, toolchainOf(target));
}
