// TUF's slow-retrieval attack: a server (or anyone on the path) that sends one byte every few hundred
// milliseconds never trips an idle timeout, and a download would take days while holding up the updates (one
// job runs at a time). Two bounds stop it: the average rate over a sliding window must stay above a minimum, and
// the whole retrieval must end by a deadline derived from its signed (or maximum) length. Each is its own
// rejection reason.

import type { Clock } from '../clock.js';
import { DownloadRejection } from './rejection.js';

export interface RetrievalPolicy {
  /** Slowest acceptable average rate over `rateWindowMs`, in bytes per second; 0 disables both bounds. */
  minBytesPerSecond: number;
  rateWindowMs: number;
}

export const defaultRetrievalPolicy: RetrievalPolicy = { minBytesPerSecond: 1024, rateWindowMs: 60_000 };

/**
 * Time allowed for retrieving `length` bytes: twice what the slowest acceptable transfer needs plus one window,
 * which leaves room for retries after dropped connections. Infinity when the bounds are disabled.
 */
export function retrievalDeadlineMs(length: number, policy: RetrievalPolicy): number {
  if (policy.minBytesPerSecond <= 0) return Number.POSITIVE_INFINITY;
  return 2 * (policy.rateWindowMs + Math.ceil((length / policy.minBytesPerSecond) * 1000));
}

/** Watches one response body: call `add` per chunk and `check` on a timer; check returns the rejection. */
export class RateWindow {
  readonly #policy: RetrievalPolicy;
  readonly #clock: Clock;
  readonly #what: string;
  readonly #startMs: number;
  /** (time, cumulative bytes) samples, oldest first, covering at least the last window. */
  #samples: [number, number][] = [];
  #total = 0;

  constructor(policy: RetrievalPolicy, clock: Clock, what: string) {
    this.#policy = policy;
    this.#clock = clock;
    this.#what = what;
    this.#startMs = clock.monotonicMs();
    this.#samples.push([this.#startMs, 0]);
  }

  add(bytes: number): void {
    this.#total += bytes;
    const now = this.#clock.monotonicMs();
    this.#samples.push([now, this.#total]);
    // Keep one sample at or before the window's start, so the window's byte count is exact.
    const edge = now - this.#policy.rateWindowMs;
    while (this.#samples.length > 2 && this.#samples[1]![0] <= edge) this.#samples.shift();
  }

  check(): DownloadRejection | undefined {
    const { minBytesPerSecond, rateWindowMs } = this.#policy;
    if (minBytesPerSecond <= 0) return undefined;
    const now = this.#clock.monotonicMs();
    if (now - this.#startMs < rateWindowMs) return undefined;
    const edge = now - rateWindowMs;
    let base = 0;
    for (const [t, bytes] of this.#samples) {
      if (t > edge) break;
      base = bytes;
    }
    const inWindow = this.#total - base;
    const rate = (inWindow * 1000) / rateWindowMs;
    if (rate >= minBytesPerSecond) return undefined;
    return new DownloadRejection(
      'slow-retrieval',
      `${this.#what} arrived at ${rate.toFixed(1)} bytes/s over the last ${rateWindowMs / 1000} s, below the minimum of ${minBytesPerSecond} bytes/s (ota.download.minBytesPerSecond)`,
      { rate, minBytesPerSecond, windowMs: rateWindowMs },
    );
  }

  /** How often `check` should run while the body streams. */
  get intervalMs(): number {
    return Math.max(50, Math.min(1000, Math.floor(this.#policy.rateWindowMs / 4)));
  }
}

export function deadlineRejection(what: string, deadlineMs: number, length: number): DownloadRejection {
  return new DownloadRejection(
    'deadline',
    `${what} was not retrieved within ${Math.round(deadlineMs / 1000)} s, the deadline for ${length} bytes at the minimum rate`,
    { deadlineMs, length },
  );
}
