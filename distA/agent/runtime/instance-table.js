const TRANSITIONS_KEPT = 200;
/**
 * The engine hosts that exist and which one serves each slot: the state the reconciler changes and serving
 * reads. Requests waiting for a slot to be served park here and wake on every change.
 */
export class InstanceTable {
    instances = new Map();
    /** Hosts whose exit is ours (stopped, failed at startup): their exit is not a crash. */
    expectedExit = new WeakSet();
    serving = {};
    transitions = [];
    #servingWaiters = [];
    #clock;
    #events;
    constructor(clock, events) {
        this.#clock = clock;
        this.#events = events;
    }
    /** The instance serving the slot now, if any. */
    servingInstance(slot) {
        const key = this.serving[slot];
        return key === undefined ? undefined : this.instances.get(key);
    }
    /** Take every slot away from the instance. */
    unserve(key) {
        for (const s of Object.keys(this.serving))
            if (this.serving[s] === key)
                delete this.serving[s];
    }
    slotsOf(key) {
        return Object.keys(this.serving).filter((s) => this.serving[s] === key);
    }
    setStatus(inst, to, reason) {
        const from = inst.status;
        if (from === to)
            return;
        inst.status = to;
        this.transition(inst, from, to, reason);
    }
    transition(inst, from, to, reason) {
        const t = {
            atMs: this.#clock.nowMs(),
            instanceKey: inst.spec.key,
            pid: inst.host.pid,
            from,
            to,
        };
        if (reason !== undefined)
            t.reason = reason;
        this.transitions.push(t);
        if (this.transitions.length > TRANSITIONS_KEPT)
            this.transitions.shift();
        this.#events.emit('transition', t);
    }
    waitServing(ms, signal) {
        return new Promise((resolve, reject) => {
            const done = () => {
                clearTimeout(timer);
                signal?.removeEventListener('abort', onAbort);
                resolve();
            };
            const onAbort = () => {
                clearTimeout(timer);
                this.#servingWaiters = this.#servingWaiters.filter((w) => w !== done);
                reject(signal?.reason);
            };
            const timer = setTimeout(done, ms);
            this.#servingWaiters.push(done);
            signal?.addEventListener('abort', onAbort, { once: true });
        });
    }
    wakeServingWaiters() {
        for (const w of this.#servingWaiters.splice(0))
            w();
    }
    /** What runs now, as the step planner reads it. */
    current() {
        return {
            instances: [...this.instances.values()].map((i) => ({
                spec: i.spec,
                status: i.status,
                pid: i.host.pid,
                rssBytes: i.rssBytes,
            })),
            serving: { ...this.serving },
        };
    }
    states() {
        return [...this.instances.values()].map((i) => ({
            key: i.spec.key,
            modelId: i.spec.modelId,
            version: i.spec.version,
            status: i.status,
            pid: i.host.pid,
            rssBytes: i.rssBytes,
            peakRssBytes: i.peakRssBytes,
            inflight: i.inflight,
            slots: this.slotsOf(i.spec.key),
            startedAtMs: i.startedAtMs,
            load: { ...i.loadSplit },
        }));
    }
}
//# sourceMappingURL=instance-table.js.map