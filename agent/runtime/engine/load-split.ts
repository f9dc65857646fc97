// Where an instance's start went, step by step, so that "the model takes 2 s to load" can be answered with
// what to change: a slow disk (read), a big or repacked model (MNN's load), a slow process start, or the
// warm-up. Slot stats, the dashboard's Models page and the fleet's placement document show it.

/** What the engine reports for the load step itself (absent for engines that do not split it). */
export interface EngineLoadTiming {
  /** Reading the weight files through the page cache: high when the cache was cold. */
  readMs: number;
  readBytes: number;
  /** MNN's own load after the read: parsing, allocation, weight repacking. */
  mnnLoadMs: number;
}

export interface LoadSplit {
  /** Spawning the engine host until it answers. */
  hostStartMs?: number;
  /** The whole load step as the runtime waited for it (the engine's parts plus the host round trip). */
  loadMs?: number;
  readMs?: number;
  readBytes?: number;
  mnnLoadMs?: number;
  /** The first generation (or forward) after the load: kernel selection and first-call allocations. */
  warmUpMs?: number;
}

/** The engine's figures at 0.1 ms: finer is noise in a document a person reads. */
export function engineSplit(t: EngineLoadTiming | undefined): Partial<EngineLoadTiming> {
  if (!t) return {};
  const tenth = (v: number) => Math.round(v * 10) / 10;
  return { readMs: tenth(t.readMs), readBytes: t.readBytes, mnnLoadMs: tenth(t.mnnLoadMs) };
}

/** "1.9 s: host 60 ms, read 310 ms (420 MiB), MNN load 1.3 s, warm-up 180 ms"; undefined when nothing was timed. */
export function describeLoadSplit(s: LoadSplit | undefined): string | undefined {
  if (!s) return undefined;
  const ms = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
  const size = (b: number) =>
    b >= 1048576 ? `${Math.round(b / 1048576)} MiB` : `${Math.max(1, Math.round(b / 1024))} KiB`;
  const parts: string[] = [];
  if (s.hostStartMs !== undefined) parts.push(`host ${ms(s.hostStartMs)}`);
  if (s.readMs !== undefined)
    parts.push(`read ${ms(s.readMs)}${s.readBytes ? ` (${size(s.readBytes)})` : ''}`);
  if (s.mnnLoadMs !== undefined) parts.push(`MNN load ${ms(s.mnnLoadMs)}`);
  else if (s.loadMs !== undefined) parts.push(`load ${ms(s.loadMs)}`);
  if (s.warmUpMs !== undefined) parts.push(`warm-up ${ms(s.warmUpMs)}`);
  if (parts.length === 0) return undefined;
  const total = (s.hostStartMs ?? 0) + (s.loadMs ?? 0) + (s.warmUpMs ?? 0);
  return `${ms(total)}: ${parts.join(', ')}`;
}
