// Monotonic time for intervals and timeouts; wall-clock time only for timestamps shown to people.
export const systemClock = {
    monotonicMs: () => Number(process.hrtime.bigint() / 1000000n),
    nowMs: () => Date.now(),
};
export function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
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
//# sourceMappingURL=clock.js.map