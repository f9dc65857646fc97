// The model store's lock: a pid file, so that a holder killed with -9 leaves a lock that the next process sees
// is free (its pid is dead). Pids do not survive a reboot, though: after a power cut the file names a pid of the
// previous boot, which a process of this boot (a kernel thread, a daemon) may hold, and the store then believed
// itself held and skipped its recovery. The file also names the boot (the kernel's boot_id), and a lock from
// another boot is free whatever its pid.
import { readFileSync } from 'node:fs';
import { writeFileDurable } from '../../lib/durable-fs.js';

export interface LockHolder {
  pid: number;
  /** The boot the holder ran in; absent in a lock written before the boot was recorded. */
  boot?: string;
}

/** This boot's id (Linux); undefined where the kernel does not say. */
export function currentBootId(): string | undefined {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return id === '' ? undefined : id;
  } catch {
    return undefined;
  }
}

export function readLock(path: string): LockHolder | undefined {
  try {
    const [pidLine = '', boot = ''] = readFileSync(path, 'utf8').split('\n');
    const pid = Number(pidLine.trim());
    if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
    return { pid, ...(boot.trim() !== '' ? { boot: boot.trim() } : {}) };
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else, so it is alive.
    return (err as { code?: string }).code === 'EPERM';
  }
}

/** The pid of a live holder other than this process, or undefined once the lock is this process's. */
export function takeLock(path: string, bootId: string | undefined = currentBootId()): number | undefined {
  const holder = readLock(path);
  const sameBoot = holder?.boot === undefined || bootId === undefined || holder.boot === bootId;
  if (holder !== undefined && holder.pid !== process.pid && sameBoot && processAlive(holder.pid))
    return holder.pid;
  writeFileDurable(path, `${process.pid}\n${bootId ?? ''}\n`);
  return undefined;
}
