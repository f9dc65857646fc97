// What the power-cut run checks after each cut, once the guest has booted again: every SQLite database's
// integrity, every acknowledged settings change, the telemetry lost against its documented window and the
// duplicates against what QoS 1 allows, and that the agent serves.
import { type Guest, sh } from './guest.js';
import type { Received } from './powercut-host.js';
import { type AckedSetting, api, tagOf } from './powercut-load.js';

export const DATA_DIR = '/var/lib/mnn-edge';

export interface IntegrityResult {
  db: string;
  result: string;
}

/** `PRAGMA integrity_check` on every database under the data directory, as the file's owner (a root-owned -shm
 *  or -wal left behind would lock the service out of its own database). */
export async function integrity(guest: Guest): Promise<IntegrityResult[]> {
  const out = await sh(
    guest,
    `find ${DATA_DIR} -type f \\( -name '*.db' -o -name '*.sqlite' -o -name '*.sqlite3' \\) | while read -r f; do
       printf '%s\\t%s\\n' "$f" "$(runuser -u "$(stat -c %U "$f")" -- sqlite3 "$f" 'PRAGMA integrity_check' 2>&1 | tr '\\n' ' ')"
     done`,
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [db = '', result = ''] = line.split('\t');
      return { db, result: result.trim() };
    });
}

export interface SettingsCheck {
  acked: number;
  /** Acknowledged changes missing from the change log, or a current value older than the last one acked. */
  lost: string[];
  problem?: string;
}

interface ConfigAnswer {
  revision: number;
  problem?: string;
  keys: Array<{ key: string; value: unknown }>;
}

interface HistoryAnswer {
  entries: Array<{ revision: number; changes: Array<{ key: string; new?: unknown }> }>;
}

export async function checkSettings(
  port: number,
  token: string,
  acked: AckedSetting[],
): Promise<SettingsCheck> {
  const client = api(port, token);
  const config = await client.get<ConfigAnswer>('/api/config');
  const history = await client.get<HistoryAnswer>('/api/config/history?limit=1000');
  const lost: string[] = [];
  const last = acked.at(-1);
  if (last !== undefined) {
    const tags = config.keys.find((k) => k.key === 'tags')?.value;
    const current = Array.isArray(tags) ? Number(/^pc-(\d+)$/.exec(String(tags[0]))?.[1] ?? -1) : -1;
    if (config.revision < last.revision)
      lost.push(`revision ${config.revision} after the cut, ${last.revision} acknowledged before it`);
    if (current < last.n) lost.push(`tags is ${JSON.stringify(tags)}, ${tagOf(last.n)} was acknowledged`);
  }
  const byRevision = new Map(history.entries.map((e) => [e.revision, e]));
  for (const a of acked) {
    const entry = byRevision.get(a.revision);
    if (entry === undefined || !JSON.stringify(entry.changes).includes(tagOf(a.n)))
      lost.push(`revision ${a.revision} (${tagOf(a.n)}) is not in the change log`);
  }
  return { acked: acked.length, lost, ...(config.problem ? { problem: config.problem } : {}) };
}

export interface TelemetryCheck {
  /** Guest clock minus host clock at the cut, and the uncertainty of that measurement (± ms). */
  offsetMs: number;
  offsetErrMs: number;
  /** Cut time minus the production time of the newest message made before it that ever arrived. */
  lostMs: number;
  window: number;
  withinWindow: boolean;
  /** Messages received twice: all, and those whose first copy arrived before the window that may repeat. */
  duplicates: number;
  duplicatesBeyondWindow: number;
}

/**
 * Telemetry around one cut. `messages` must hold what arrived after the next boot drained its backlog (a message
 * produced after the cut has arrived): the outbox publishes in `seq` order, so everything committed before the
 * cut has arrived by then.
 */
export function checkTelemetry(
  messages: readonly Received[],
  cut: { hostMs: number; offsetMs: number; offsetErrMs: number },
  window: { flushIntervalMs: number; publishIntervalMs: number },
): TelemetryCheck {
  const cutGuest = cut.hostMs + cut.offsetMs;
  const before = messages.filter((m) => m.ts <= cutGuest);
  const newest = before.reduce((m, r) => Math.max(m, r.ts), 0);
  const lostMs = cutGuest - newest;
  // A message is committed at most flushIntervalMs after it is made, and one is made every publishIntervalMs:
  // the newest survivor is at most their sum older than the cut.
  const bound = window.flushIntervalMs + window.publishIntervalMs;
  const seen = new Map<string, number>();
  let duplicates = 0;
  let beyond = 0;
  for (const m of before) {
    const key = `${m.seq}/${m.ts}`;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, m.at);
      continue;
    }
    if (m.at <= cut.hostMs) continue; // a duplicate from an earlier cut, counted there
    duplicates++;
    // Only an acknowledgement inside the uncommitted window may be forgotten and the message sent again.
    if (first < cut.hostMs - window.flushIntervalMs - cut.offsetErrMs) beyond++;
  }
  return {
    offsetMs: cut.offsetMs,
    offsetErrMs: cut.offsetErrMs,
    lostMs,
    window: bound,
    withinWindow: lostMs - cut.offsetErrMs <= bound,
    duplicates,
    duplicatesBeyondWindow: beyond,
  };
}

/** Sequence numbers used twice for different messages (a committed, delivered message whose commit was lost),
 *  and gaps (messages dropped): both must stay empty. */
export function seqFaults(messages: readonly Received[]): { reused: number[]; gaps: number[] } {
  const tsBySeq = new Map<number, number>();
  const reused = new Set<number>();
  for (const m of messages) {
    const ts = tsBySeq.get(m.seq);
    if (ts === undefined) tsBySeq.set(m.seq, m.ts);
    else if (ts !== m.ts) reused.add(m.seq);
  }
  const seqs = [...tsBySeq.keys()].sort((a, b) => a - b);
  const gaps: number[] = [];
  for (let i = 1; i < seqs.length; i++)
    for (let s = seqs[i - 1]! + 1; s < seqs[i]! && gaps.length < 100; s++) gaps.push(s);
  return { reused: [...reused], gaps };
}
