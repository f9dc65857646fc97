// What the soak benchmark reads from outside the agent: per-process memory, descriptors and threads from /proc,
// the engine hosts among the agent's children, file sizes under the data directory; and the arithmetic of the
// report: a least-squares slope per hour, quantiles, and a one-line chart per series.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcFacts {
  rssBytes: number;
  fds: number;
  threads: number;
}

/** RSS, open descriptors and threads of one process, or undefined once it has gone. */
export function procFacts(pid: number): ProcFacts | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    const threads = Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { rssBytes: kb * 1024, fds: readdirSync(`/proc/${pid}/fd`).length, threads };
  } catch {
    return undefined;
  }
}

/** The agent's engine hosts: its child processes running host-main. */
export function engineHostPids(agentPid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== agentPid) continue;
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('host-main')) out.push(Number(e));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** Bytes under a directory (files only), leaving out the subdirectories named in `skip`. */
export function treeBytes(dir: string, skip: readonly string[] = []): number {
  let total = 0;
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!skip.includes(e.name)) total += treeBytes(p, skip);
    } else if (e.isFile()) {
      try {
        total += statSync(p).size;
      } catch {
        // removed while we looked
      }
    }
  }
  return total;
}

export function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Least-squares slope of y over x (both as given), NaN with fewer than 3 points. */
export function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 3) return Number.NaN;
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den > 0 ? num / den : Number.NaN;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

const BLOCKS = '▁▂▃▄▅▆▇█';

/** The series as one line of block characters, `width` columns (means of equal slices), scaled min..max. */
export function sparkline(values: readonly number[], width = 60): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return '';
  const cols = Math.min(width, finite.length);
  const slices = Array.from({ length: cols }, (_, i) => {
    const part = finite.slice(
      Math.floor((i * finite.length) / cols),
      Math.max(Math.floor(((i + 1) * finite.length) / cols), Math.floor((i * finite.length) / cols) + 1),
    );
    return part.reduce((a, b) => a + b, 0) / part.length;
  });
  const lo = Math.min(...slices);
  const hi = Math.max(...slices);
  return slices
    .map((v) => (hi > lo ? BLOCKS[Math.min(7, Math.floor(((v - lo) / (hi - lo)) * 8))] : BLOCKS[0]))
    .join('');
}
