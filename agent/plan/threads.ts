import type { PlanBoard } from './types.js';

export interface ThreadChoice {
  threads: number;
  cpus: number[];
  reason: string;
}

/** Decode is memory-bound and MNN's CPU kernels split work evenly between threads, so a thread on a slow core
 *  holds the fast ones back: use the fastest cluster only, one thread per core. */
export function chooseThreads(board: PlanBoard): ThreadChoice {
  if (board.threadAdvice) return { ...board.threadAdvice };
  const clusters = [...board.cpuClusters].filter((c) => c.cpus.length > 0);
  if (clusters.length === 0) return { threads: 1, cpus: [], reason: 'no CPU topology known: 1 thread' };
  clusters.sort((a, b) => b.maxFreqKHz - a.maxFreqKHz || b.cpus.length - a.cpus.length);
  const best = clusters[0]!;
  const ghz = (best.maxFreqKHz / 1e6).toFixed(2);
  if (clusters.length === 1) {
    return {
      threads: best.cpus.length,
      cpus: [],
      reason: `${best.cpus.length} threads: one per core of the single cluster ${best.name} (${ghz} GHz)`,
    };
  }
  return {
    threads: best.cpus.length,
    cpus: [...best.cpus],
    reason: `${best.cpus.length} threads pinned to the fastest cluster ${best.name} (${ghz} GHz) of ${clusters.length}`,
  };
}
