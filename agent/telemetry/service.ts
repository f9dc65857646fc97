import type { Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import { PROTOCOL_VERSION } from '../../lib/wire.js';
import type { TelemetryConfig } from '../config/sections/telemetry.js';
import { MetricAggregator, type Summary } from './aggregate.js';
import type { TelemetryHistory } from './history.js';
import { vacuumIfWorthIt } from './maintenance.js';
import { encodeTelemetry, type SlotTelemetry, type TelemetryMessage } from './message.js';
import type { Outbox } from './outbox.js';
import {
  type RuntimeStatsProvider,
  type SlotRuntimeStats,
  slotGauges,
  type WorkloadMetricsProvider,
} from './runtime-stats.js';
import type { Sampler } from './samplers.js';

// Samples on one timer, summarises and enqueues on another, maintains the store on a third. Sampling never
// blocks on the network: messages go to the outbox, and the drainer delivers them when it can.

export interface TelemetryServiceOptions {
  deviceId: string;
  topic: string;
  config: TelemetryConfig;
  db: Db;
  outbox: Outbox;
  history: TelemetryHistory;
  samplers: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
  clock: Clock;
  logger: Logger;
  /** Called with each interval's summary (after it is queued), e.g. to refresh Home Assistant discovery. */
  onSnapshot?: (snapshot: TelemetrySnapshot) => void;
}

export interface TelemetrySnapshot {
  ts: number;
  metrics: Record<string, Summary>;
  slots: Record<string, SlotTelemetry>;
}

export class TelemetryService {
  readonly #o: TelemetryServiceOptions;
  readonly #agg = new MetricAggregator();
  #slots: readonly SlotRuntimeStats[] = [];
  /** Each slot's request count at the last message, for its requests in the interval. */
  readonly #requestsAt = new Map<string, number>();
  #intervalStart: number;
  #latest: TelemetrySnapshot | undefined;
  readonly #timers: NodeJS.Timeout[] = [];
  #sampling: Promise<void> | undefined;

  constructor(options: TelemetryServiceOptions) {
    this.#o = options;
    this.#intervalStart = options.clock.nowMs();
  }

  start(): void {
    if (this.#timers.length > 0) return;
    const { sampleIntervalMs, publishIntervalMs, maintenanceIntervalMs } = this.#o.config;
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref();
      this.#timers.push(t);
    };
    const publish = () => {
      this.publish().catch((err: unknown) =>
        this.#o.logger.error('telemetry publish failed', { error: errorMessage(err) }),
      );
    };
    // A publish interval that is a whole number of sample intervals (the default: 6) publishes right after every
    // n-th sample round, in the same wake-up: on an idle board each wake-up of the agent is most of what it costs
    // (bench/idle), and the message then ends on a fresh sample.
    const roundsPerPublish = publishIntervalMs / sampleIntervalMs;
    if (Number.isInteger(roundsPerPublish)) {
      let round = 0;
      every(sampleIntervalMs, () => {
        void this.sample();
        round = (round + 1) % roundsPerPublish;
        if (round === 0) publish();
      });
    } else {
      every(sampleIntervalMs, () => void this.sample());
      every(publishIntervalMs, publish);
    }
    every(maintenanceIntervalMs, () => this.maintain());
    void this.sample();
  }

  stop(): void {
    for (const t of this.#timers.splice(0)) clearInterval(t);
  }

  /** A run-time settings change: the timers restart on the new intervals (when running). */
  setIntervals(intervals: { sampleIntervalMs: number; publishIntervalMs: number }): boolean {
    const c = this.#o.config;
    if (
      c.sampleIntervalMs === intervals.sampleIntervalMs &&
      c.publishIntervalMs === intervals.publishIntervalMs
    )
      return false;
    this.#o.config = { ...c, ...intervals };
    if (this.#timers.length === 0) return true;
    this.stop();
    this.start();
    return true;
  }

  /** One round of every sampler; a failing sampler is logged and skipped, the others still count. */
  sample(): Promise<void> {
    // Overlapping rounds (a slow sampler on a loaded board) would double-count; skip instead.
    this.#sampling ??= this.#sampleOnce().finally(() => {
      this.#sampling = undefined;
    });
    return this.#sampling;
  }

  async #sampleOnce(): Promise<void> {
    const results = await Promise.allSettled(this.#o.samplers.map((s) => s.sample()));
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') this.#agg.addAll(r.value);
      else
        this.#o.logger.debug('sampler failed', {
          sampler: this.#o.samplers[i]!.name,
          error: errorMessage(r.reason),
        });
    });
    try {
      if (this.#o.runtime) {
        this.#slots = this.#o.runtime.slots();
        this.#agg.addAll(slotGauges(this.#slots));
      }
      if (this.#o.workloads) this.#agg.addAll(this.#o.workloads.metrics());
    } catch (err) {
      this.#o.logger.debug('runtime stats failed', { error: errorMessage(err) });
    }
  }

  /** Ends the interval: one telemetry message into the outbox, one point into the history. */
  async publish(): Promise<number | undefined> {
    await this.#sampling;
    const now = this.#o.clock.nowMs();
    const metrics = this.#agg.take();
    const intervalMs = Math.max(1, now - this.#intervalStart);
    this.#intervalStart = now;
    if (Object.keys(metrics).length === 0) return undefined;
    const slots: Record<string, SlotTelemetry> = {};
    for (const s of this.#slots) {
      const before = this.#requestsAt.get(s.slot) ?? 0;
      this.#requestsAt.set(s.slot, s.requests);
      slots[s.slot] = {
        requests: s.requests,
        errors: s.errors,
        tokensPerSec: s.tokensPerSec ?? 0,
        intervalRequests: Math.max(0, s.requests - before),
        ...(s.model !== undefined ? { model: s.model } : {}),
        ...(s.variant !== undefined ? { variant: s.variant } : {}),
        ...(s.backend !== undefined ? { backend: s.backend } : {}),
      };
    }
    this.#latest = { ts: now, metrics, slots };
    try {
      this.#o.history.record(metrics, now);
    } catch (err) {
      this.#o.logger.warn('history write failed', { error: errorMessage(err) });
    }
    const { outbox, deviceId, topic, config } = this.#o;
    const stats = outbox.stats();
    const seq = outbox.enqueue(topic, (seq) => {
      const message: TelemetryMessage = {
        v: PROTOCOL_VERSION,
        deviceId,
        seq,
        ts: now,
        intervalMs,
        expiresAt: now + config.outbox.messageExpirySec * 1000,
        metrics,
        slots,
        outbox: { queued: stats.queued + stats.pending, dropped: stats.dropped },
      };
      return encodeTelemetry(message);
    });
    try {
      this.#o.onSnapshot?.(this.#latest);
    } catch (err) {
      this.#o.logger.warn('telemetry snapshot listener failed', { error: errorMessage(err) });
    }
    return seq;
  }

  /** Retention and VACUUM; called on the maintenance schedule. */
  maintain(): { expired: number; pruned: number; vacuumed: boolean } {
    try {
      this.#o.outbox.flush();
      const expired = this.#o.outbox.expire();
      const pruned = this.#o.history.prune();
      const { vacuumed } = vacuumIfWorthIt(this.#o.db);
      this.#o.logger.debug('telemetry maintenance', { expired, pruned, vacuumed });
      return { expired, pruned, vacuumed };
    } catch (err) {
      this.#o.logger.warn('telemetry maintenance failed', { error: errorMessage(err) });
      return { expired: 0, pruned: 0, vacuumed: false };
    }
  }

  latest(): TelemetrySnapshot | undefined {
    return this.#latest;
  }
}
