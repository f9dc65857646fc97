import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

// Reads memory facts from procfs under a root (`/` on a board), for the swap decision and for verifying that a
// stopped host gave its memory back.

export interface SystemMemory {
  memAvailableBytes(): Promise<number>;
  /** Whether a process with this pid still exists (a zombie counts as gone: its memory is freed). */
  processAlive(pid: number): Promise<boolean>;
}

function kbField(text: string, field: string): number | undefined {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

export function procSystemMemory(root = '/'): SystemMemory {
  return {
    async memAvailableBytes() {
      const path = join(root, 'proc/meminfo');
      const text = await readFile(path, 'utf8');
      const v = kbField(text, 'MemAvailable');
      if (v === undefined) throw new Error(`${path} has no MemAvailable line (kernel older than 3.14?)`);
      return v;
    },
    async processAlive(pid) {
      try {
        const status = await readFile(join(root, 'proc', String(pid), 'status'), 'utf8');
        return !/^State:\s+[ZX]/m.test(status);
      } catch {
        return false;
      }
    },
  };
}

/** VmRSS, VmHWM (peak) and RssAnon (kernel 4.5+) of a process, from /proc/<pid>/status. */
export async function processMemory(
  pid: number,
  root = '/',
): Promise<{ rssBytes: number; peakRssBytes: number; anonBytes?: number }> {
  const path = join(root, 'proc', String(pid), 'status');
  const text = await readFile(path, 'utf8');
  const rss = kbField(text, 'VmRSS');
  const hwm = kbField(text, 'VmHWM');
  if (rss === undefined || hwm === undefined) throw new Error(`${path} has no VmRSS/VmHWM lines`);
  const anon = kbField(text, 'RssAnon');
  return anon === undefined
    ? { rssBytes: rss, peakRssBytes: hwm }
    : { rssBytes: rss, peakRssBytes: hwm, anonBytes: anon };
}
