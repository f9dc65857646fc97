// Finds and loads the built addon. When it cannot, the reason says what to do, and engineAvailability()
// lets callers (the runtime, the tests) decide without catching.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hex, readOwnAuxv, riscvHasLetter } from '../../lib/auxv.js';
import { foreignElfReason, libraryFor, riscvVectorRefusal } from '../../lib/elf.js';
import { EngineError } from './errors.js';
import type { BackendProbeResult, EngineAddon, RuntimeInfo } from './native.js';
import { nativeSourcesDigest } from './native-sources.js';
import { packageRootAbove } from './package-root.js';

const here = dirname(fileURLToPath(import.meta.url));
// The addon is built once into the package's engine/build (cmake-js), whether this file runs from source
// (engine/src), from dist/engine/src or bundled into dist/agent/cli.
const root = packageRootAbove(here);
const engineDir = root ? join(root, 'engine') : resolve(here, '..');

export const ENGINE_HELP =
  'Set MNN_ROOT to an MNN install prefix (include/MNN, lib/libMNN.so, the llm library) and run npm run build:engine.';

/** Where the addon is looked for: MNN_EDGE_ENGINE_ADDON, then engine/build/{Release,Debug}. */
export function addonCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const explicit = env['MNN_EDGE_ENGINE_ADDON'];
  if (explicit) return [resolve(explicit)];
  return ['Release', 'Debug'].map((c) => join(engineDir, 'build', c, 'mnn_edge_engine.node'));
}

export type EngineAvailability =
  | { available: true; info: RuntimeInfo }
  | { available: false; reason: string };

/** The full message for an unavailable engine, in the words the issue and the build script use. */
export function unavailableMessage(reason: string): string {
  return `MNN engine not available: ${reason}. ${ENGINE_HELP}`;
}

/** The GPU backends' chains; an addon built before probeBackend existed answers none. */
export function probeGpuBackends(addon: EngineAddon, info: RuntimeInfo): BackendProbeResult[] {
  const probe = addon.probeBackend;
  if (typeof probe !== 'function') return [];
  return info.backends
    .filter((b) => b.name === 'vulkan' || b.name === 'opencl')
    .map((b) => probe.call(addon, b.name));
}

export interface AddonLoader {
  load(): EngineAddon;
  availability(): EngineAvailability;
}

/**
 * A loader that loads the addon once per loader instance (the composition root creates one; tests may create
 * their own with another path list), so there is no module-level cache to reset.
 */
/** Why an addon built from `built` cannot be driven by this checkout, or undefined when it can (or cannot tell). */
export function sourcesMismatch(path: string, built: unknown, sourcesDir: string): string | undefined {
  const here = nativeSourcesDigest(sourcesDir);
  if (typeof built !== 'string' || here === undefined || built === here) return undefined;
  return (
    `the engine addon at ${path} was built from other native sources than ${sourcesDir} ` +
    `(addon ${built.slice(0, 12)}, sources ${here.slice(0, 12)}): rebuild it with npm run build:engine`
  );
}

/** On RISC-V: an MNN built for the V extension on a CPU without it is refused before it loads (it would die of
 *  SIGILL at its first vector instruction: MNN's RVV build has no run-time dispatch). */
function vectorRefusal(addonPath: string): string | undefined {
  if (process.arch !== 'riscv64') return undefined;
  const lib = libraryFor(addonPath, 'libMNN.so');
  if (lib === undefined) return undefined;
  const auxv = readOwnAuxv();
  const hwcap = auxv?.hwcap ?? null;
  const hasV = auxv === null ? null : riscvHasLetter(auxv, 'V');
  return riscvVectorRefusal(
    lib,
    hasV,
    hwcap === null ? 'no auxiliary vector' : `AT_HWCAP=${hex(hwcap)} has no V bit`,
  );
}

export function createAddonLoader(
  candidates: string[] = addonCandidates(),
  sourcesDir: string = join(engineDir, 'native'),
): AddonLoader {
  let cached: { addon: EngineAddon } | { reason: string } | undefined;
  const attempt = (): { addon: EngineAddon } | { reason: string } => {
    if (cached) return cached;
    const path = candidates.find((p) => existsSync(p));
    if (!path) {
      cached = {
        reason: `the engine addon is not built (looked for ${candidates.join(', ')}; the build is skipped when no MNN install is found)`,
      };
      return cached;
    }
    // An addon or libMNN.so for another CPU is named as such rather than left to dlopen's message.
    const foreign = foreignElfReason(path, 'the engine addon', { library: 'libMNN.so' });
    if (foreign !== undefined) {
      cached = { reason: foreign };
      return cached;
    }
    const vector = vectorRefusal(path);
    if (vector !== undefined) {
      cached = { reason: vector };
      return cached;
    }
    try {
      const addon = createRequire(import.meta.url)(path) as EngineAddon;
      const mismatch = sourcesMismatch(path, addon.nativeSources, sourcesDir);
      cached = mismatch ? { reason: mismatch } : { addon };
    } catch (err) {
      const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
      cached = {
        reason: `the engine addon at ${path} failed to load (${first}); is libMNN.so still installed?`,
      };
    }
    return cached;
  };
  return {
    load() {
      const r = attempt();
      if ('addon' in r) return r.addon;
      throw new EngineError('ENOENGINE', unavailableMessage(r.reason), { reason: r.reason });
    },
    availability() {
      const r = attempt();
      if (!('addon' in r)) return { available: false, reason: r.reason };
      try {
        const info = r.addon.runtimeInfo();
        return { available: true, info: { ...info, probes: probeGpuBackends(r.addon, info) } };
      } catch (err) {
        return { available: false, reason: `MNN runtimeInfo() failed: ${String(err)}` };
      }
    },
  };
}
