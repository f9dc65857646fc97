// Same core on both sides of a speed comparison. Logical CPUs are not equally fast everywhere: on big.LITTLE
// boards by design, and on a shared virtual machine because the host runs other work beside some vCPUs (on the
// 2-vCPU machine these benchmarks were written on, MNN's llm_bench decodes 0.6x as fast on CPU 0 as on CPU 1,
// every time). A single-threaded tool and a process with a JS thread beside its decode thread do not land on the
// same CPU by chance, so a ratio between them measured unpinned mostly measures where the scheduler put each.
// Running both sides' decoding on one CPU per round, and taking the rounds across every CPU in turn, compares
// the work.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpusAllowed } from '../../test/helpers/cpu-list.js';

/** The logical CPUs this process may run on (its affinity list), in order. */
export function allowedCpus(): number[] {
  return cpusAllowed(readFileSync('/proc/self/status', 'utf8'));
}

/** Whether `taskset` (util-linux) is here: without it nothing is pinned and the report says so. */
export function canPin(): boolean {
  return spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** The command line that runs `bin` on one CPU (or as it is, when nothing can be pinned). */
export function onCpu(cpu: number | undefined, bin: string, args: string[]): [string, string[]] {
  return cpu === undefined ? [bin, args] : ['taskset', ['-c', String(cpu), bin, ...args]];
}

/** Moves every thread of a running process to the given CPUs. */
function pinProcess(pid: number, cpus: readonly number[]): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus.join(','), String(pid)], { stdio: 'ignore' });
}

/**
 * Runs `fn` with this process's threads on `cpus`, then gives them the whole affinity list `all` back (nothing
 * pinned when `cpus` is empty). Processes it starts meanwhile inherit the affinity.
 */
export async function withSelfOn<T>(
  cpus: readonly number[],
  all: readonly number[],
  fn: () => Promise<T>,
): Promise<T> {
  if (cpus.length === 0) return fn();
  pinProcess(process.pid, cpus);
  try {
    return await fn();
  } finally {
    pinProcess(process.pid, all);
  }
}
