import type { Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import type { OutboxConfig } from '../config/sections/telemetry.js';

// Store-and-forward for telemetry. A message is written here before it is ever published and leaves only when
// the broker acknowledges it (PUBACK), expires, or is pushed out by the size bound. Flash wears and fsyncs are
// slow, so new messages and acknowledgements are buffered and committed together, at most every
// `flushIntervalMs`: that interval is the loss window on a power cut (messages produced in it are lost, and
// messages acknowledged in it are delivered again after restart, which QoS 1 allows and `seq` exposes).
// A timer only promises that while the process gets the CPU: a starved agent fires it late, so the buffers are
// also bounded by count, and committed synchronously when one fills. Those bounds hold whatever the timers do: a
// cut loses at most `flushMaxMessages` messages and forgets at most `flushMaxAcks` acknowledgements.

export interface OutboxMessage {
  seq: number;
  topic: string;
  payload: Buffer;
  createdAt: number;
  expiresAt: number;
}

export interface OutboxDrops {
  expired: number;
  overflow: number;
  diskFull: number;
}

export interface OutboxStats {
  /** Committed messages still waiting for a PUBACK. */
  queued: number;
  queuedBytes: number;
  /** Produced but not yet committed (inside the loss window). */
  pending: number;
  dropped: OutboxDrops;
  /** True after a commit failed for lack of space, until one succeeds again. */
  degraded: boolean;
  nextSeq: number;
}

export interface OutboxEvents extends Record<string, unknown> {
  /** New messages became durable and can be published. */
  committed: { count: number };
  degraded: { reason: string };
  recovered: Record<string, never>;
}

type CounterName = 'next_seq' | 'dropped_expired' | 'dropped_overflow' | 'dropped_disk_full';

export interface OutboxOptions {
  db: Db;
  config: OutboxConfig;
  clock: Clock;
  logger: Logger;
}

const DISK_FULL_CODES = new Set(['SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR']);

function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && DISK_FULL_CODES.has(code);
}

export class Outbox extends TypedEventEmitter<OutboxEvents> {
  readonly #db: Db;
  readonly #config: OutboxConfig;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #pending: OutboxMessage[] = [];
  readonly #acked = new Set<number>();
  #nextSeq: number;
  #queued: number;
  #queuedBytes: number;
  readonly #drops: OutboxDrops;
  #degraded = false;
  #flushTimer: NodeJS.Timeout | undefined;
  #closed = false;

  readonly #stmt;

  constructor(options: OutboxOptions) {
    super();
    this.#db = options.db;
    this.#config = options.config;
    this.#clock = options.clock;
    this.#log = options.logger;
    const db = this.#db;
    this.#stmt = {
      insert: db.prepare(
        'INSERT INTO telemetry_outbox (seq, topic, payload, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      ),
      remove: db.prepare('DELETE FROM telemetry_outbox WHERE seq = ? RETURNING length(payload) AS bytes'),
      next: db.prepare(
        'SELECT seq, topic, payload, created_at AS createdAt, expires_at AS expiresAt FROM telemetry_outbox WHERE seq > ? AND expires_at > ? ORDER BY seq LIMIT ?',
      ),
      expire: db.prepare(
        'DELETE FROM telemetry_outbox WHERE expires_at <= ? RETURNING seq, length(payload) AS bytes',
      ),
      oldest: db.prepare('SELECT seq, length(payload) AS bytes FROM telemetry_outbox ORDER BY seq'),
      dropUpTo: db.prepare('DELETE FROM telemetry_outbox WHERE seq <= ?'),
      totals: db.prepare(
        'SELECT count(*) AS n, coalesce(sum(length(payload)), 0) AS bytes, coalesce(max(seq), 0) AS maxSeq FROM telemetry_outbox',
      ),
      getCounter: db.prepare('SELECT value FROM telemetry_counters WHERE name = ?'),
      setCounter: db.prepare(
        'INSERT INTO telemetry_counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value',
      ),
    };
    const totals = this.#stmt.totals.get() as { n: number; bytes: number; maxSeq: number };
    this.#queued = totals.n;
    this.#queuedBytes = totals.bytes;
    // Sequence numbers survive restarts; numbers handed out but never committed are reused, which is safe
    // because they were never published.
    this.#nextSeq = Math.max(this.#counter('next_seq') ?? 1, totals.maxSeq + 1);
    this.#drops = {
      expired: this.#counter('dropped_expired') ?? 0,
      overflow: this.#counter('dropped_overflow') ?? 0,
      diskFull: this.#counter('dropped_disk_full') ?? 0,
    };
  }

  #counter(name: CounterName): number | undefined {
    const row = this.#stmt.getCounter.get(name) as { value: number } | undefined;
    return row?.value;
  }

  /** Adds a message; `build` receives its sequence number so the payload can carry it. */
  enqueue(topic: string, build: (seq: number) => string | Buffer): number {
    if (this.#closed) throw new Error('Outbox is closed');
    const seq = this.#nextSeq++;
    const now = this.#clock.nowMs();
    const body = build(seq);
    if (this.#pending.length >= this.#config.maxMessages) {
      // Commits keep failing (see flush): the buffer obeys the same bound as the table.
      this.#pending.shift();
      this.#drops.overflow++;
    }
    this.#pending.push({
      seq,
      topic,
      payload: typeof body === 'string' ? Buffer.from(body) : body,
      createdAt: now,
      expiresAt: now + this.#config.messageExpirySec * 1000,
    });
    this.#afterBuffering(this.#pending.length >= this.#config.flushMaxMessages);
    return seq;
  }

  /** The broker has the message (PUBACK); it is removed with the next commit. */
  acknowledge(seq: number): void {
    if (this.#closed) return;
    this.#acked.add(seq);
    this.#afterBuffering(this.#acked.size >= this.#config.flushMaxAcks);
  }

  /** Commits now when a buffer is full (or batching is off), else within the interval. */
  #afterBuffering(full: boolean): void {
    if (this.#config.flushIntervalMs === 0) this.flush();
    else if (full) this.#commit();
    else this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#commit();
    }, this.#config.flushIntervalMs);
    this.#flushTimer.unref();
  }

  /** A flush the caller did not ask for (the timer, the count bound): its failure is logged, not thrown. */
  #commit(): void {
    try {
      this.flush();
    } catch (err) {
      // Not a full disk (that degrades inside flush): a broken or closed database. Telemetry stops being
      // stored, the agent must not crash over it; the batch stays buffered for the next attempt.
      this.#log.error('outbox commit failed', { error: errorMessage(err) });
    }
  }

  /** Commits buffered messages and acknowledgements in one transaction (one fsync). */
  flush(): void {
    if (this.#flushTimer !== undefined) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
    }
    if (this.#pending.length === 0 && this.#acked.size === 0) return;
    const batch = this.#pending.splice(0);
    const acked = [...this.#acked];
    this.#acked.clear();
    let addedBytes = 0;
    let removed = 0;
    let removedBytes = 0;
    try {
      this.#db.transaction(() => {
        for (const seq of acked) {
          const row = this.#stmt.remove.get(seq) as { bytes: number } | undefined;
          if (row) {
            removed++;
            removedBytes += row.bytes;
          }
        }
        for (const m of batch) {
          this.#stmt.insert.run(m.seq, m.topic, m.payload, m.createdAt, m.expiresAt);
          addedBytes += m.payload.length;
        }
        if (batch.length > 0) this.#stmt.setCounter.run('next_seq', batch[batch.length - 1]!.seq + 1);
        if (this.#degraded) this.#stmt.setCounter.run('dropped_disk_full', this.#drops.diskFull);
      })();
    } catch (err) {
      if (!isDiskFull(err)) {
        this.#pending.unshift(...batch);
        for (const seq of acked) this.#acked.add(seq);
        throw err;
      }
      this.#onDiskFull(err, batch.length, acked);
      return;
    }
    this.#queued += batch.length - removed;
    this.#queuedBytes += addedBytes - removedBytes;
    if (this.#degraded) {
      this.#degraded = false;
      this.#log.info('outbox writable again');
      this.emit('recovered', {});
    }
    this.#enforceBounds();
    if (batch.length > 0) this.emit('committed', { count: batch.length });
  }

  #onDiskFull(err: unknown, lost: number, acked: number[]): void {
    // Telemetry degrades, the agent does not: the batch is dropped and counted, acknowledgements are kept
    // for the next attempt (losing them would only cause duplicates), and expired rows are cleared to make room.
    this.#drops.diskFull += lost;
    for (const seq of acked) this.#acked.add(seq);
    if (!this.#degraded) {
      this.#degraded = true;
      this.#log.warn('outbox cannot write: telemetry is being dropped', { error: errorMessage(err), lost });
      this.emit('degraded', { reason: errorMessage(err) });
    }
    try {
      this.expire();
    } catch {
      // Still full: the next flush tries again.
    }
  }

  #enforceBounds(): void {
    const { maxMessages, maxBytes } = this.#config;
    if (this.#queued <= maxMessages && this.#queuedBytes <= maxBytes) return;
    let dropCount = 0;
    let dropBytes = 0;
    let lastSeq = 0;
    for (const row of this.#stmt.oldest.iterate() as IterableIterator<{ seq: number; bytes: number }>) {
      if (this.#queued - dropCount <= maxMessages && this.#queuedBytes - dropBytes <= maxBytes) break;
      dropCount++;
      dropBytes += row.bytes;
      lastSeq = row.seq;
    }
    if (dropCount === 0) return;
    this.#db.transaction(() => {
      this.#stmt.dropUpTo.run(lastSeq);
      this.#drops.overflow += dropCount;
      this.#stmt.setCounter.run('dropped_overflow', this.#drops.overflow);
    })();
    this.#queued -= dropCount;
    this.#queuedBytes -= dropBytes;
    this.#log.warn('outbox full: dropped the oldest messages', { dropped: dropCount, upToSeq: lastSeq });
  }

  /** Deletes messages whose expiry has passed; returns how many were never delivered (counted as dropped). */
  expire(): number {
    const rows = this.#stmt.expire.all(this.#clock.nowMs()) as { seq: number; bytes: number }[];
    if (rows.length === 0) return 0;
    this.#queued -= rows.length;
    this.#queuedBytes -= rows.reduce((n, r) => n + r.bytes, 0);
    // A row whose PUBACK is waiting for the next commit was delivered, not lost: not a drop.
    let lost = 0;
    for (const r of rows) if (!this.#acked.delete(r.seq)) lost++;
    if (lost === 0) return 0;
    this.#drops.expired += lost;
    this.#stmt.setCounter.run('dropped_expired', this.#drops.expired);
    return lost;
  }

  /** Committed, unexpired, not yet acknowledged messages after `afterSeq`, oldest first. */
  next(afterSeq: number, limit: number): OutboxMessage[] {
    // Acknowledged rows stay until the next commit. They lie behind the drain cursor except after a rewind, so
    // the usual case is one query; otherwise page on past them.
    const now = this.#clock.nowMs();
    const out: OutboxMessage[] = [];
    let cursor = afterSeq;
    while (out.length < limit) {
      const want = limit - out.length;
      const rows = this.#stmt.next.all(cursor, now, want) as OutboxMessage[];
      for (const r of rows) if (!this.#acked.has(r.seq)) out.push(r);
      if (rows.length < want) break;
      cursor = rows[rows.length - 1]!.seq;
    }
    return out;
  }

  stats(): OutboxStats {
    return {
      queued: this.#queued,
      queuedBytes: this.#queuedBytes,
      pending: this.#pending.length,
      dropped: { ...this.#drops },
      degraded: this.#degraded,
      nextSeq: this.#nextSeq,
    };
  }

  /** Commits what is buffered and stops the flush timer; further enqueues are refused. */
  close(): void {
    if (this.#closed) return;
    try {
      this.flush();
    } finally {
      this.#closed = true;
    }
  }
}
