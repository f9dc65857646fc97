// Bounded waits: the caller's signal (the turn) and a budget of our own, whichever ends first.

/** Both the caller's signal (the turn) and our own budget, whichever ends first. */
export function withBudget(signal: AbortSignal | undefined, ms: number): AbortSignal {
  const budget = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, budget]) : budget;
}

/** The promise, or the signal's reason when it aborts first (the promise itself goes on). */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
