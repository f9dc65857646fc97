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

// Samples on one timer, summarises on another (the local history, /metrics, the dashboard), maintains the store on
// a third. Sampling the board is not the fleet's business: the service runs with or without MQTT, and while the
// fleet runs it also puts each interval's message into the fleet's outbox (deliverTo). Sampling never blocks on
// the network: the drainer delivers from the outbox when it can.

export interface TelemetryServiceOptions {
  deviceId: string;
  config: TelemetryConfig;
  db: Db;
  history: TelemetryHistory;
  samplers: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
  clock: Clock;
  logger: Logger;
}

/** The fleet's side of telemetry: the durable outbox its drainer empties onto the broker, and the topic. */
export interface TelemetryDelivery {
  outbox: Outbox;
  topic: string;
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
  #delivery: TelemetryDelivery | undefined;
  readonly #snapshotListeners = new Set<(snapshot: TelemetrySnapshot) => void>();

  constructor(options: TelemetryServiceOptions) {
    this.#o = options;
    this.#intervalStart = options.clock.nowMs();
  }

  /** From now on each interval's message also goes into `delivery`'s outbox; returns the undo (the fleet
   *  stopping). One delivery at a time: the agent has one fleet connection. Without one the service samples and
   *  keeps its history, for /metrics and the dashboard on a board with no broker. */
  deliverTo(delivery: TelemetryDelivery): () => void {
    this.#delivery = delivery;
    return () => {
      if (this.#delivery === delivery) this.#delivery = undefined;
    };
  }

  /** Runs `listener` with each interval's summary (Home Assistant re-announces when its entities changed, the
   *  dashboard's live feed); returns the remover. */
  onSnapshot(listener: (snapshot: TelemetrySnapshot) => void): () => void {
    this.#snapshotListeners.add(listener);
    return () => this.#snapshotListeners.delete(listener);
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

  /** Ends the interval: one point into the history and, while the fleet runs, one message into its outbox. */
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
    const seq = this.#enqueue(now, intervalMs, metrics, slots);
    for (const listener of this.#snapshotListeners) {
      try {
        listener(this.#latest);
      } catch (err) {
        this.#o.logger.warn('telemetry snapshot listener failed', { error: errorMessage(err) });
      }
    }
    return seq;
  }

  /** The interval's message into the fleet's outbox, when the fleet runs; its sequence number. */
  #enqueue(
    now: number,
    intervalMs: number,
    metrics: Record<string, Summary>,
    slots: Record<string, SlotTelemetry>,
  ): number | undefined {
    if (this.#delivery === undefined) return undefined;
    const { outbox, topic } = this.#delivery;
    const { deviceId, config } = this.#o;
    const stats = outbox.stats();
    return outbox.enqueue(topic, (seq) => {
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
  }

  /** Retention and VACUUM; called on the maintenance schedule. */
  maintain(): { expired: number; pruned: number; vacuumed: boolean } {
    try {
      const outbox = this.#delivery?.outbox;
      outbox?.flush();
      const expired = outbox?.expire() ?? 0;
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
