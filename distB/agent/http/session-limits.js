// Live sessions (telemetry streams, voice and vision sockets) hold memory and, for voice and vision, an engine.
// Both limits here are per agent: a count of concurrent sessions and a message rate per connection. They are
// exported so the workloads' sockets enforce the same numbers the dashboard shows.
/** WebSocket close codes (4000–4999 are the application's): the browser shows the reason with them. */
export const WS_CLOSE = {
    tooManySessions: 4429,
    rateLimited: 4408,
    messageTooBig: 1009,
};
export function createSessionLimiter(limit) {
    if (!Number.isInteger(limit) || limit < 1)
        throw new RangeError(`Session limit must be a positive integer, got ${limit}`);
    let active = 0;
    return {
        limit,
        get active() {
            return active;
        },
        tryAcquire() {
            if (active >= limit)
                return undefined;
            active++;
            let released = false;
            return () => {
                if (released)
                    return;
                released = true;
                active--;
            };
        },
        refusal() {
            return `Too many concurrent sessions: ${active} of ${limit} are open (http.maxSessions); close one and retry`;
        },
    };
}
/** Messages per second on one connection, as a token bucket: short bursts pass, a flood is refused. */
export class MessageRateLimiter {
    #clock;
    #perSecond;
    #burst;
    #tokens;
    #lastMs;
    constructor(clock, perSecond, burst = perSecond) {
        if (!(perSecond > 0) || !(burst >= 1))
            throw new RangeError('Rate and burst must be positive');
        this.#clock = clock;
        this.#perSecond = perSecond;
        this.#burst = burst;
        this.#tokens = burst;
        this.#lastMs = clock.monotonicMs();
    }
    /** Whether one more message may pass now. */
    take() {
        const now = this.#clock.monotonicMs();
        this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#lastMs) / 1000) * this.#perSecond);
        this.#lastMs = now;
        if (this.#tokens < 1)
            return false;
        this.#tokens -= 1;
        return true;
    }
    describe() {
        return `Message rate over ${this.#perSecond}/s (burst ${this.#burst}) on this connection`;
    }
}
//# sourceMappingURL=session-limits.js.map