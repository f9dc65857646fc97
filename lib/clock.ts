// Monotonic time for intervals and timeouts; wall-clock time only for timestamps shown to people.

export interface Clock {
  /** Milliseconds since an arbitrary origin; never goes backwards. */
  monotonicMs(): number;
  /** Wall-clock epoch milliseconds (may be wrong on boards without an RTC). */
  nowMs(): number;
}

export const systemClock: Clock = {
  monotonicMs: () => Number(process.hrtime.bigint() / 1000000n),
  nowMs: () => Date.now(),
};

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
