import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// CPU load and memory straight from /proc: two small reads per sample. (systeminformation did the same reads,
// but loading it kept ~1 MB of JavaScript in the idle agent's heap for these two numbers; bench/idle.)
// The reads are synchronous: procfs files are made in memory by the kernel and never wait on a disk, and an
// asynchronous read is an open, fstat, read and close each sent to the thread pool and woken up for, every
// sample round of an idle agent (bench/idle). The readers keep their promise so a test can stand in for them.

export interface CpuLoad {
  /** Busy share of all CPUs since the previous call (since boot on the first), percent. */
  currentLoad: number;
  cpus: { load: number }[];
}

interface Ticks {
  busy: number;
  total: number;
}

/** `cpu  user nice system idle iowait irq softirq steal ...`: idle and iowait are the idle part. */
function parseCpuLine(line: string): Ticks {
  const v = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = v.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: total - idle, total };
}

function percent(now: Ticks, before: Ticks | undefined): number {
  const total = now.total - (before?.total ?? 0);
  const busy = now.busy - (before?.busy ?? 0);
  return total > 0 ? Math.min(100, Math.max(0, (busy / total) * 100)) : 0;
}

/** A reader of CPU load over the time between its calls; each reader keeps its own previous sample. */
export function procCpuLoad(procDir = '/proc'): () => Promise<CpuLoad> {
  let previous: { all: Ticks; cpus: Ticks[] } | undefined;
  return async () => {
    const lines = readFileSync(join(procDir, 'stat'), 'utf8').split('\n');
    const allLine = lines.find((l) => l.startsWith('cpu '));
    if (!allLine) throw new Error(`${join(procDir, 'stat')} has no aggregate cpu line`);
    const all = parseCpuLine(allLine);
    const cpus = lines.filter((l) => /^cpu\d+ /.test(l)).map(parseCpuLine);
    const load: CpuLoad = {
      currentLoad: percent(all, previous?.all),
      cpus: cpus.map((c, i) => ({ load: percent(c, previous?.cpus[i]) })),
    };
    previous = { all, cpus };
    return load;
  };
}

/** MemTotal and MemAvailable (what can be allocated without swapping), in bytes. */
export async function procMemory(procDir = '/proc'): Promise<{ total: number; available: number }> {
  const text = readFileSync(join(procDir, 'meminfo'), 'utf8');
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    if (!m) throw new Error(`${join(procDir, 'meminfo')} has no ${key}`);
    return Number(m[1]) * 1024;
  };
  return { total: kb('MemTotal'), available: kb('MemAvailable') };
}
