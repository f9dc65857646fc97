export const defaultFailureBackoff = {
    baseMs: 30_000,
    maxMs: 30 * 60_000,
    forgetAfterMs: 60 * 60_000,
};
/** Which candidates failed, why, and when to try each again: the memory behind fallback and retry-preferred. */
export class FailureBook {
    #records = new Map();
    #clock;
    #backoff;
    /** Candidates held regardless of backoff (a backend that is down until probes pass). */
    #held;
    constructor(clock, backoff = defaultFailureBackoff) {
        this.#clock = clock;
        this.#backoff = backoff;
    }
    holdWith(held) {
        this.#held = held;
    }
    /** Forget the candidates' failures (their backend came back after passing probes). */
    forget(match) {
        for (const key of [...this.#records.keys()])
            if (match(key))
                this.#records.delete(key);
    }
    record(key, reason) {
        const now = this.#clock.monotonicMs();
        const prev = this.#records.get(key);
        const count = prev && now - prev.lastAtMs < this.#backoff.forgetAfterMs ? prev.count + 1 : 1;
        const delay = Math.min(this.#backoff.maxMs, this.#backoff.baseMs * 2 ** (count - 1));
        const rec = { key, count, reason, lastAtMs: now, retryAtMs: now + delay };
        this.#records.set(key, rec);
        return rec;
    }
    blocked(key) {
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
    get(key) {
        return this.#records.get(key);
    }
    /** The earliest moment a blocked candidate becomes eligible again. */
    nextRetryAtMs() {
        const now = this.#clock.monotonicMs();
        let next;
        for (const r of this.#records.values())
            if (r.retryAtMs > now && (next === undefined || r.retryAtMs < next))
                next = r.retryAtMs;
        return next;
    }
    all() {
        return [...this.#records.values()];
    }
}
//# sourceMappingURL=failures.js.map