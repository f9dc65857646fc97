import type { Clock } from '../../../lib/clock.js';
import type { LoadTimeRecord } from '../desired/types.js';
import type { InstanceLoad, LoadReport } from '../engine/engine-port.js';
import { engineSplit } from '../engine/load-split.js';
import type { Instance } from './instance.js';

// How long each model took to load, cold and warm, for the dashboard. A GPU backend's first load compiles its
// kernels (cold); a later one with the kernel cache present (warm) should be much faster, and an operator
// deciding between backends wants both figures. Backends without a kernel cache (the CPU) have one figure.

export type LoadCache = LoadReport['cache'];

export type { InstanceLoad };

/** The latest cold and warm load per model variant and backend, since the agent started. */
export class LoadTimes {
  readonly #records = new Map<string, LoadTimeRecord>();

  record(inst: Instance, load: InstanceLoad): void {
    const { spec } = inst;
    const model = `${spec.modelId}@${spec.version}/${spec.variantId}`;
    const backend = spec.config.backend_type;
    const key = `${model}|${backend}`;
    const r = this.#records.get(key) ?? { model, backend, loads: 0 };
    r.loads++;
    if (load.cache === 'cold') r.coldMs = load.ms;
    else if (load.cache === 'warm') r.warmMs = load.ms;
    else r.noCacheMs = load.ms;
    this.#records.set(key, r);
  }

  list(): LoadTimeRecord[] {
    return [...this.#records.values()].map((r) => ({ ...r }));
  }
}

/** Loads the instance's model, timing it; the time and the cache state stay on the instance and in the book. */
export async function timedLoad(
  inst: Instance,
  book: LoadTimes,
  clock: Clock,
  signal: AbortSignal,
): Promise<void> {
  const t0 = clock.monotonicMs();
  const report = await inst.host.load(inst.spec, signal);
  inst.load = { ms: Math.round(clock.monotonicMs() - t0), cache: report.cache };
  Object.assign(inst.loadSplit, engineSplit(report.engine), { loadMs: inst.load.ms });
  book.record(inst, inst.load);
}
