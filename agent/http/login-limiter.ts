import type { Clock } from '../../lib/clock.js';

// Failed logins per client address in a sliding window on the monotonic clock (a wall-clock jump at NTP sync
// must neither lock everyone out nor reset the count). Successes do not clear the count: an attacker who also
// owns one valid session gains nothing.

export interface LoginLimiterOptions {
  clock: Pick<Clock, 'monotonicMs'>;
  /** Failures allowed per address inside the window (default 5). */
  maxFailures?: number;
  windowMs?: number;
  /** Addresses tracked at most; the oldest are forgotten beyond this (bounded memory under a spray). */
  maxTracked?: number;
}

export interface LoginLimiter {
  /** 0 when the address may try now, else milliseconds until it may. */
  retryAfterMs(address: string): number;
  recordFailure(address: string): void;
}

export function createLoginLimiter(options: LoginLimiterOptions): LoginLimiter {
  const maxFailures = options.maxFailures ?? 5;
  const windowMs = options.windowMs ?? 60_000;
  const maxTracked = options.maxTracked ?? 10_000;
  const failures = new Map<string, number[]>();

  const recent = (address: string, now: number): number[] => {
    const times = (failures.get(address) ?? []).filter((t) => now - t < windowMs);
    if (times.length === 0) failures.delete(address);
    else failures.set(address, times);
    return times;
  };

  return {
    retryAfterMs(address) {
      const now = options.clock.monotonicMs();
      const times = recent(address, now);
      if (times.length < maxFailures) return 0;
      return Math.max(1, times[times.length - maxFailures]! + windowMs - now);
    },
    recordFailure(address) {
      const now = options.clock.monotonicMs();
      const times = recent(address, now);
      times.push(now);
      failures.delete(address);
      failures.set(address, times);
      if (failures.size > maxTracked) {
        const oldest = failures.keys().next().value;
        if (oldest !== undefined) failures.delete(oldest);
      }
    },
  };
}
