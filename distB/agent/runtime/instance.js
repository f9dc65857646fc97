import { EngineFailure } from './engine-port.js';
/** One loaded model in one engine host, with the leases that use it. */
export class Instance {
    spec;
    host;
    status = 'starting';
    startedAtMs;
    peakRssBytes = 0;
    rssBytes = 0;
    /** RssAnon when the host reports it, else its RSS. */
    anonBytes = 0;
    /** Filled in step by step as the reconciler starts, loads and warms the instance. */
    loadSplit = {};
    #leases = new Set();
    #idle = [];
    constructor(spec, host, startedAtMs) {
        this.spec = spec;
        this.host = host;
        this.startedAtMs = startedAtMs;
    }
    get inflight() {
        return this.#leases.size;
    }
    lease() {
        const ctl = new AbortController();
        this.#leases.add(ctl);
        let released = false;
        return {
            instanceKey: this.spec.key,
            host: this.host,
            signal: ctl.signal,
            release: () => {
                if (released)
                    return;
                released = true;
                this.#leases.delete(ctl);
                if (this.#leases.size === 0)
                    for (const wake of this.#idle.splice(0))
                        wake();
            },
        };
    }
    /** Abort every open lease (the host died, or a drain ran out of time). */
    cancelAll(reason) {
        const n = this.#leases.size;
        for (const ctl of this.#leases)
            ctl.abort(reason);
        return n;
    }
    /** Wait for in-flight requests to finish; at the deadline cancel the rest and give them `graceMs` to unwind. */
    async drain(timeoutMs, graceMs, now) {
        const start = now();
        if (this.#leases.size === 0)
            return { waitedMs: 0, cancelled: 0 };
        const idle = new Promise((resolve) => this.#idle.push(resolve));
        const finished = await waitFor(idle, timeoutMs);
        if (finished)
            return { waitedMs: now() - start, cancelled: 0 };
        const cancelled = this.cancelAll(new EngineFailure('cancelled', `request cancelled: ${this.spec.key} was being replaced and the ${timeoutMs} ms drain deadline passed`));
        await waitFor(idle, graceMs);
        return { waitedMs: now() - start, cancelled };
    }
}
function waitFor(p, ms) {
    return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        void p.then(() => {
            clearTimeout(timer);
            resolve(true);
        });
    });
}
//# sourceMappingURL=instance.js.map