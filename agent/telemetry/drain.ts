import type { Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { Outbox, OutboxMessage } from './outbox.js';

// Moves committed outbox messages to the broker in sequence order, with a bounded number in flight and an
// optional rate limit (so that a board coming back after a long outage does not flood its uplink or the
// broker). A message is deleted only when its PUBACK arrives.

export interface QosPublisher {
  readonly connected: boolean;
  /** QoS 1 publish; `done` runs on PUBACK, or with an error if the message could not be delivered. */
  publish(message: OutboxMessage, done: (err?: Error) => void): void;
}

export interface DrainOptions {
  outbox: Outbox;
  publisher: QosPublisher;
  maxInflight: number;
  /** Messages per second; 0 = as fast as acknowledgements allow. */
  ratePerSec: number;
  clock: Clock;
  logger: Logger;
}

const READ_AHEAD = 256;

export interface DrainStats {
  inflight: number;
  published: number;
  acknowledged: number;
  failed: number;
}

export class OutboxDrainer {
  readonly #o: DrainOptions;
  readonly #inflight = new Set<number>();
  /** Highest sequence number handed to the publisher in this process. */
  #cursor = 0;
  #tokens: number;
  #lastRefill: number;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #pumping = false;
  #kickQueued = false;
  /** Read ahead from the outbox so that one query serves many publishes. */
  #ahead: OutboxMessage[] = [];
  readonly #stats: DrainStats = { inflight: 0, published: 0, acknowledged: 0, failed: 0 };
  readonly #unsubscribe: () => void;

  constructor(options: DrainOptions) {
    this.#o = options;
    this.#tokens = Math.max(1, options.ratePerSec);
    this.#lastRefill = options.clock.monotonicMs();
    this.#unsubscribe = options.outbox.on('committed', () => this.kick());
  }

  /** Call when the connection (re)opens or new messages may be available. */
  kick(): void {
    if (this.#stopped || this.#pumping) return;
    this.#pumping = true;
    try {
      this.#pump();
    } finally {
      this.#pumping = false;
    }
  }

  #refill(): void {
    const rate = this.#o.ratePerSec;
    if (rate === 0) return;
    const now = this.#o.clock.monotonicMs();
    // At most one second of burst, so the limit holds right after a reconnect too.
    this.#tokens = Math.min(rate, this.#tokens + ((now - this.#lastRefill) * rate) / 1000);
    this.#lastRefill = now;
  }

  #pump(): void {
    const { publisher, outbox, maxInflight, ratePerSec } = this.#o;
    while (publisher.connected && !this.#stopped) {
      const room = maxInflight - this.#inflight.size;
      if (room <= 0) return;
      this.#refill();
      const allowed = ratePerSec === 0 ? room : Math.min(room, Math.floor(this.#tokens));
      if (allowed <= 0) {
        this.#scheduleRetry(Math.ceil(1000 / ratePerSec));
        return;
      }
      if (this.#ahead.length === 0) {
        this.#ahead = outbox.next(this.#cursor, READ_AHEAD).filter((m) => !this.#inflight.has(m.seq));
        if (this.#ahead.length === 0) return;
      }
      const now = this.#o.clock.nowMs();
      for (const m of this.#ahead.splice(0, allowed)) {
        this.#cursor = Math.max(this.#cursor, m.seq);
        // Read ahead, then expired: left in place for the outbox's expiry sweep to delete and count.
        if (m.expiresAt <= now) continue;
        this.#inflight.add(m.seq);
        if (ratePerSec > 0) this.#tokens -= 1;
        this.#stats.published++;
        publisher.publish(m, (err) => this.#settled(m.seq, err));
      }
    }
  }

  #settled(seq: number, err: Error | undefined): void {
    this.#inflight.delete(seq);
    if (err) {
      // Not delivered: rewind so the message is sent again, in order, once the connection allows.
      this.#stats.failed++;
      this.#cursor = Math.min(this.#cursor, seq - 1);
      this.#ahead = [];
      this.#o.logger.debug('publish failed; will retry', { seq, error: errorMessage(err) });
    } else {
      this.#stats.acknowledged++;
      this.#o.outbox.acknowledge(seq);
    }
    // Acknowledgements arrive in bursts (one socket read holds many PUBACKs): one refill for the burst.
    if (!this.#kickQueued) {
      this.#kickQueued = true;
      queueMicrotask(() => {
        this.#kickQueued = false;
        this.kick();
      });
    }
  }

  #scheduleRetry(ms: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.kick();
    }, ms);
    this.#timer.unref();
  }

  stats(): DrainStats {
    return { ...this.#stats, inflight: this.#inflight.size };
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
