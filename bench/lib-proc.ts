// Reading a process tree's CPU time and RSS from /proc, for the benchmarks that weigh the daemon (idle, metrics).
import { readdirSync, readFileSync } from 'node:fs';

export const TICKS = 100; // USER_HZ on Linux

/** The pid and every descendant's (engine hosts, the embedded broker's workers). */
export function treePids(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(e));
      parents.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(parents.get(out[i]!) ?? []));
  return out;
}

/** utime + stime, in clock ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** `f` summed over pids, skipping those that exited. */
export function sumOver(pids: number[], f: (pid: number) => number): number {
  let total = 0;
  for (const p of pids) {
    try {
      total += f(p);
    } catch {
      // gone
    }
  }
  return total;
}
