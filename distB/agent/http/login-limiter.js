export function createLoginLimiter(options) {
    const maxFailures = options.maxFailures ?? 5;
    const windowMs = options.windowMs ?? 60_000;
    const maxTracked = options.maxTracked ?? 10_000;
    const failures = new Map();
    const recent = (address, now) => {
        const times = (failures.get(address) ?? []).filter((t) => now - t < windowMs);
        if (times.length === 0)
            failures.delete(address);
        else
            failures.set(address, times);
        return times;
    };
    return {
        retryAfterMs(address) {
            const now = options.clock.monotonicMs();
            const times = recent(address, now);
            if (times.length < maxFailures)
                return 0;
            return Math.max(1, times[times.length - maxFailures] + windowMs - now);
        },
        recordFailure(address) {
            const now = options.clock.monotonicMs();
            const times = recent(address, now);
            times.push(now);
            failures.delete(address);
            failures.set(address, times);
            if (failures.size > maxTracked) {
                const oldest = failures.keys().next().value;
                if (oldest !== undefined)
                    failures.delete(oldest);
            }
        },
    };
}
//# sourceMappingURL=login-limiter.js.map