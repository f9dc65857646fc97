import type { Clock } from '../../../lib/clock.js';

export interface FailureRecord {
  key: string;
  count: number;
  reason: string;
  lastAtMs: number;
  /** Monotonic time after which the candidate may be tried again. */
  retryAtMs: number;
}

export interface FailureBackoff {
  /** First blocking period; doubles with each failure in a row. */
  baseMs: number;
  maxMs: number;
  /** A failure this long after the previous one starts the count again. */
  forgetAfterMs: number;
}

export const defaultFailureBackoff: FailureBackoff = {
  baseMs: 30_000,
  maxMs: 30 * 60_000,
  forgetAfterMs: 60 * 60_000,
};

/** Which candidates failed, why, and when to try each again: the memory behind fallback and retry-preferred. */
export class FailureBook {
  readonly #records = new Map<string, FailureRecord>();
  readonly #clock: Clock;
  readonly #backoff: FailureBackoff;

  /** Candidates held regardless of backoff (a backend that is down until probes pass). */
  #held: ((key: string) => { reason: string } | undefined) | undefined;

  constructor(clock: Clock, backoff: FailureBackoff = defaultFailureBackoff) {
    this.#clock = clock;
    this.#backoff = backoff;
  }

  holdWith(held: (key: string) => { reason: string } | undefined): void {
    this.#held = held;
  }

  /** Forget the candidates' failures (their backend came back after passing probes). */
  forget(match: (key: string) => boolean): void {
    for (const key of [...this.#records.keys()]) if (match(key)) this.#records.delete(key);
  }

  record(key: string, reason: string): FailureRecord {
    const now = this.#clock.monotonicMs();
    const prev = this.#records.get(key);
    const count = prev && now - prev.lastAtMs < this.#backoff.forgetAfterMs ? prev.count + 1 : 1;
    const delay = Math.min(this.#backoff.maxMs, this.#backoff.baseMs * 2 ** (count - 1));
    const rec: FailureRecord = { key, count, reason, lastAtMs: now, retryAtMs: now + delay };
    this.#records.set(key, rec);
    return rec;
  }

  blocked(key: string): FailureRecord | undefined {
    const rec = this.#records.get(key);
    const held = this.#held?.(key);
    if (held)
      return {
        key,
        count: rec?.count ?? 1,
        reason: rec?.reason ?? held.reason,
        lastAtMs: rec?.lastAtMs ?? this.#clock.monotonicMs(),
        retryAtMs: Number.POSITIVE_INFINITY,
      };
    return rec && rec.retryAtMs > this.#clock.monotonicMs() ? rec : undefined;
  }

  get(key: string): FailureRecord | undefined {
    return this.#records.get(key);
  }

  /** The earliest moment a blocked candidate becomes eligible again. */
  nextRetryAtMs(): number | undefined {
    const now = this.#clock.monotonicMs();
    let next: number | undefined;
    for (const r of this.#records.values())
      if (r.retryAtMs > now && (next === undefined || r.retryAtMs < next)) next = r.retryAtMs;
    return next;
  }

  all(): FailureRecord[] {
    return [...this.#records.values()];
  }
}
