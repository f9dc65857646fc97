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

function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime, in clock ticks. */
export function cpuTicks(pid: number): number {
  const f = statFields(pid);
  return Number(f[11]) + Number(f[12]);
}

/**
 * utime + stime plus cutime + cstime: also the CPU of children that ran and were reaped in the meantime
 * (a systemd-notify per watchdog ping lives a few milliseconds, never long enough to be seen in the tree).
 */
export function cpuTicksWithReaped(pid: number): number {
  const f = statFields(pid);
  return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
}

/** Times the process's main thread went to sleep waiting (each one a wake-up later): voluntary switches. */
export function voluntarySwitches(pid: number): number {
  const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
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
