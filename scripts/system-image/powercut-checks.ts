// What the power-cut run checks after each cut, once the guest has booted again: every SQLite database's
// integrity, every acknowledged settings change, the telemetry lost against its documented window and the
// duplicates against what QoS 1 allows, and that the agent serves.
import { type Guest, sh } from './guest.js';
import { guestExec } from './guest-agent.js';
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

/** What the guest said just before the cut: its clock (against the host's, ± half the round trip) and, from the
 *  agent's /metrics, the newest telemetry `seq` it had made and how many were uncommitted, read `blindMs` before
 *  the kill. */
export interface AtCut {
  hostMs: number;
  offsetMs: number;
  offsetErrMs: number;
  lastSeq?: number;
  uncommitted?: number;
  blindMs?: number;
}

/** The outbox settings the run gives the agent: the documented bounds are made of them (docs/PROTOCOL.md). */
export interface TelemetryBounds {
  flushIntervalMs: number;
  publishIntervalMs: number;
  flushMaxMessages: number;
  flushMaxAcks: number;
  maxInflight: number;
}

export interface TelemetryCheck {
  /** Guest clock minus host clock at the cut, and the uncertainty of that measurement (± ms). */
  offsetMs: number;
  offsetErrMs: number;
  /** Messages made before the cut that never arrived: the newest `seq` made (read just before the cut) minus
   *  the newest that arrived; undefined when the agent's /metrics could not be read. A message made between that
   *  read and the kill is not seen: the figure is a lower bound, short by at most what the agent made in
   *  `blindMs`. */
  lostMessages?: number;
  blindMs: number;
  /** The documented bound, which holds however late the agent runs: flushMaxMessages. */
  messageBound: number;
  /** lostMessages within messageBound (false when it could not be read: unchecked is not a pass). */
  withinBound: boolean;
  /** Cut time minus the production time of the newest message made before it that ever arrived. */
  lostMs: number;
  /** flushIntervalMs + publishIntervalMs: what lostMs stays within while the agent's timers run on time (a
   *  starved agent also makes messages less often, which lostMs counts as loss): a figure, not the bound. */
  window: number;
  withinWindow: boolean;
  /** Messages received twice (first copy before the cut, again after it): all, against the documented bound
   *  flushMaxAcks + maxInflight, and those whose first copy arrived before the on-time window (a figure). */
  duplicates: number;
  duplicateBound: number;
  duplicatesWithinBound: boolean;
  duplicatesBeyondWindow: number;
}

/** Just before the cut: the guest's clock over the guest agent (a round trip of seconds under TCG), then the
 *  agent's newest telemetry `seq` and uncommitted count from /metrics through the forwarded port, the last thing
 *  before the kill: what the agent makes between that answer and the kill is not seen, so that time is kept. */
export async function readAtCut(guest: Guest, token: string): Promise<Omit<AtCut, 'hostMs'>> {
  const before = Date.now();
  const r = await guestExec(guest.qga, 'date +%s%3N', 30_000);
  const after = Date.now();
  const asked = Date.now();
  let text = '';
  try {
    const res = await fetch(`http://127.0.0.1:${guest.port}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(20_000),
    });
    if (res.ok) text = await res.text();
  } catch {
    // Unread: the cut's loss is then unchecked, which fails it (checkTelemetry).
  }
  const metric = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  const lastSeq = metric('mnn_edge_telemetry_last_seq');
  const uncommitted = metric('mnn_edge_telemetry_outbox_uncommitted');
  return {
    offsetMs: Number(r.stdout.trim()) - (before + after) / 2,
    offsetErrMs: (after - before) / 2,
    ...(lastSeq === undefined ? {} : { lastSeq }),
    ...(uncommitted === undefined ? {} : { uncommitted }),
    blindMs: Date.now() - asked,
  };
}

/**
 * Telemetry around one cut. `messages` must hold what arrived after the next boot drained its backlog (a message
 * produced after the cut has arrived): the outbox publishes in `seq` order, so everything committed before the
 * cut has arrived by then.
 */
export function checkTelemetry(
  messages: readonly Received[],
  cut: AtCut,
  bounds: TelemetryBounds,
): TelemetryCheck {
  const cutGuest = cut.hostMs + cut.offsetMs;
  const before = messages.filter((m) => m.ts <= cutGuest);
  const newest = before.reduce((m, r) => Math.max(m, r.ts), 0);
  const newestSeq = before.reduce((m, r) => Math.max(m, r.seq), 0);
  const lostMs = cutGuest - newest;
  // A message is committed at most flushIntervalMs after it is made, and one is made every publishIntervalMs:
  // with timers on time, the newest survivor is at most their sum older than the cut.
  const window = bounds.flushIntervalMs + bounds.publishIntervalMs;
  // A message made after the read but before the kill may have been committed too; then nothing is counted.
  const lostMessages = cut.lastSeq === undefined ? undefined : Math.max(0, cut.lastSeq - newestSeq);
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
    if (first < cut.hostMs - bounds.flushIntervalMs - cut.offsetErrMs) beyond++;
  }
  const duplicateBound = bounds.flushMaxAcks + bounds.maxInflight;
  return {
    offsetMs: cut.offsetMs,
    offsetErrMs: cut.offsetErrMs,
    ...(lostMessages === undefined ? {} : { lostMessages }),
    // Read in the guest-agent round trip (older runs): anywhere in it.
    blindMs: cut.blindMs ?? 2 * cut.offsetErrMs,
    messageBound: bounds.flushMaxMessages,
    withinBound: lostMessages !== undefined && lostMessages <= bounds.flushMaxMessages,
    lostMs,
    window,
    withinWindow: lostMs - cut.offsetErrMs <= window,
    duplicates,
    duplicateBound,
    duplicatesWithinBound: duplicates <= duplicateBound,
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
