import type { Clock } from '../../lib/clock.js';
import { invalidParameter } from '../../lib/errors.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { HistoryConfig } from '../config/sections/telemetry.js';
import type { Summary } from './aggregate.js';

// The dashboard's charts read the last hours from here instead of from the outbox, which empties as messages
// are delivered. Points are merged into fixed buckets (min, max, sum, count), so the table's size depends on
// retention and the number of metrics, never on the publish interval.

export interface HistoryPoint {
  /** Bucket start, epoch ms. */
  t: number;
  min: number;
  mean: number;
  max: number;
}

export interface HistoryQuery {
  metrics: readonly string[];
  /** Epoch ms, inclusive. */
  since: number;
  until?: number;
  /** Downsample further so that at most this many points come back per metric. */
  maxPoints?: number;
}

const METRIC_NAME = /^[A-Za-z0-9_.:/-]{1,128}$/;

export class TelemetryHistory {
  readonly #db: Db;
  readonly #config: HistoryConfig;
  readonly #clock: Clock;
  readonly #stmt;

  constructor(db: Db, config: HistoryConfig, clock: Clock) {
    this.#db = db;
    this.#config = config;
    this.#clock = clock;
    this.#stmt = {
      upsert: db.prepare(`INSERT INTO telemetry_history (metric, bucket_start, count, min, max, sum)
        VALUES (@metric, @bucket, @n, @min, @max, @sum)
        ON CONFLICT(metric, bucket_start) DO UPDATE SET
          count = count + excluded.count,
          min = min(min, excluded.min),
          max = max(max, excluded.max),
          sum = sum + excluded.sum`),
      range: db.prepare(`SELECT bucket_start AS t, count, min, max, sum FROM telemetry_history
        WHERE metric = ? AND bucket_start >= ? AND bucket_start <= ? ORDER BY bucket_start`),
      metrics: db.prepare('SELECT DISTINCT metric FROM telemetry_history ORDER BY metric'),
      prune: db.prepare('DELETE FROM telemetry_history WHERE bucket_start < ?'),
    };
  }

  get bucketMs(): number {
    return this.#config.bucketSec * 1000;
  }

  /** Merges one interval's summaries into the bucket containing `at`. */
  record(summaries: Readonly<Record<string, Summary>>, at = this.#clock.nowMs()): void {
    const bucket = Math.floor(at / this.bucketMs) * this.bucketMs;
    this.#db.transaction(() => {
      for (const [metric, s] of Object.entries(summaries)) {
        if (s.n <= 0) continue;
        this.#stmt.upsert.run({ metric, bucket, n: s.n, min: s.min, max: s.max, sum: s.mean * s.n });
      }
    })();
  }

  metrics(): string[] {
    return (this.#stmt.metrics.all() as { metric: string }[]).map((r) => r.metric);
  }

  query(q: HistoryQuery): Record<string, HistoryPoint[]> {
    if (!Array.isArray(q.metrics) || q.metrics.length === 0 || q.metrics.length > 64)
      throw invalidParameter('metrics', 'an array of 1 to 64 metric names', q.metrics);
    for (const m of q.metrics)
      if (typeof m !== 'string' || !METRIC_NAME.test(m))
        throw invalidParameter('metrics[]', 'a metric name', m);
    if (!Number.isFinite(q.since)) throw invalidParameter('since', 'epoch milliseconds', q.since);
    const until = q.until ?? this.#clock.nowMs();
    if (!Number.isFinite(until) || until < q.since)
      throw invalidParameter('until', `epoch milliseconds >= since (${q.since})`, q.until);
    const maxPoints = q.maxPoints ?? 500;
    if (!Number.isInteger(maxPoints) || maxPoints < 1 || maxPoints > 10_000)
      throw invalidParameter('maxPoints', 'an integer from 1 to 10000', q.maxPoints);
    // Wider buckets when the range holds more native buckets than the caller can draw.
    const span = Math.max(1, Math.ceil((until - q.since + 1) / this.bucketMs / maxPoints)) * this.bucketMs;
    const out: Record<string, HistoryPoint[]> = {};
    for (const metric of q.metrics) {
      const rows = this.#stmt.range.all(metric, q.since, until) as {
        t: number;
        count: number;
        min: number;
        max: number;
        sum: number;
      }[];
      const merged = new Map<number, { min: number; max: number; sum: number; count: number }>();
      for (const r of rows) {
        const t = Math.floor(r.t / span) * span;
        const m = merged.get(t);
        if (m === undefined) merged.set(t, { min: r.min, max: r.max, sum: r.sum, count: r.count });
        else {
          m.min = Math.min(m.min, r.min);
          m.max = Math.max(m.max, r.max);
          m.sum += r.sum;
          m.count += r.count;
        }
      }
      out[metric] = [...merged].map(([t, m]) => ({ t, min: m.min, mean: m.sum / m.count, max: m.max }));
    }
    return out;
  }

  /** Deletes buckets older than the retention; returns how many rows went. */
  prune(now = this.#clock.nowMs()): number {
    return this.#stmt.prune.run(now - this.#config.retentionHours * 3_600_000).changes;
  }
}
