import type { EngineAvailability } from '../../engine/src/index.js';
import type { EngineBackendProbe } from '../detect/index.js';

// What an engine host found about each GPU backend, in detect's terms, so the capability document, the planner
// and the dashboard show the same chain and the same first failing step.

/** The engine's per-backend chains (empty when the engine is missing or predates probeBackend). */
export function engineProbes(availability: EngineAvailability | undefined): EngineBackendProbe[] {
  if (!availability?.available) return [];
  return (availability.info.probes ?? []).map((p) => ({
    name: p.name,
    compiledIn: p.compiledIn,
    deviceKind: p.deviceKind,
    steps: p.steps.map((s) => ({ step: s.step, status: s.status, detail: s.detail, evidence: [] })),
  }));
}

/** Backends the installed MNN has compiled in (a runtime creator registered, device or not). */
export function engineCompiledIn(availability: EngineAvailability | undefined): string[] | undefined {
  if (!availability?.available) return undefined;
  const compiled = availability.info.backends.filter((b) => b.compiledIn).map((b) => b.name as string);
  // A chain that got past "compiled in" is the better witness (older addons asked a check that hid OpenCL).
  for (const p of availability.info.probes ?? [])
    if (p.compiledIn && !compiled.includes(p.name)) compiled.push(p.name);
  return compiled;
}
