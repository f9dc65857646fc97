// A pull that was cut or cancelled leaves its files in hub-downloads/ so that the next pull of the same
// repository resumes instead of downloading again. One that nobody pulls again would keep its gigabytes on a
// small board forever: when the agent starts, partial downloads untouched for maxAgeDays are removed.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const STALE_PARTIAL_DAYS = 7;

export interface RemovedPartial {
  dir: string;
  bytes: number;
  idleDays: number;
}

/** Newest modification time and total size of the files under `dir`. */
function usage(dir: string): { newestMs: number; bytes: number } {
  let newestMs = statSync(dir).mtimeMs;
  let bytes = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const u = usage(p);
      newestMs = Math.max(newestMs, u.newestMs);
      bytes += u.bytes;
    } else {
      const s = statSync(p);
      newestMs = Math.max(newestMs, s.mtimeMs);
      bytes += s.size;
    }
  }
  return { newestMs, bytes };
}

/** Removes the partial downloads in `workRoot` whose newest file is older than maxAgeDays; returns them. */
export function removeStalePartials(
  workRoot: string,
  options: { maxAgeDays?: number; nowMs?: number } = {},
): RemovedPartial[] {
  const maxAgeMs = (options.maxAgeDays ?? STALE_PARTIAL_DAYS) * 86_400_000;
  const now = options.nowMs ?? Date.now();
  let entries: string[];
  try {
    entries = readdirSync(workRoot);
  } catch {
    return [];
  }
  const removed: RemovedPartial[] = [];
  for (const name of entries) {
    const dir = join(workRoot, name);
    try {
      if (!statSync(dir).isDirectory()) continue;
      const u = usage(dir);
      if (now - u.newestMs < maxAgeMs) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push({ dir, bytes: u.bytes, idleDays: Math.floor((now - u.newestMs) / 86_400_000) });
    } catch {
      // Unreadable or vanished meanwhile: left for the next start.
    }
  }
  return removed;
}
