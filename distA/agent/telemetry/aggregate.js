// Telemetry carries one summary per interval, not raw samples: a board sampling every few seconds would
// otherwise spend its uplink (and the outbox its flash) on numbers nobody charts.
/** Running min/mean/max per metric name; `take()` returns the interval's summaries and starts a new one. */
export class MetricAggregator {
    #acc = new Map();
    add(metric, value) {
        if (!Number.isFinite(value))
            return;
        const a = this.#acc.get(metric);
        if (a === undefined) {
            this.#acc.set(metric, { min: value, max: value, sum: value, n: 1 });
            return;
        }
        if (value < a.min)
            a.min = value;
        if (value > a.max)
            a.max = value;
        a.sum += value;
        a.n++;
    }
    addAll(sample) {
        for (const [k, v] of Object.entries(sample))
            this.add(k, v);
    }
    get size() {
        return this.#acc.size;
    }
    take() {
        const out = {};
        for (const [k, a] of [...this.#acc].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) {
            out[k] = { min: round(a.min), mean: round(a.sum / a.n), max: round(a.max), n: a.n };
        }
        this.#acc.clear();
        return out;
    }
}
/** Four significant decimals are plenty for charts and keep payloads small. */
export function round(v) {
    return Math.round(v * 10_000) / 10_000;
}
//# sourceMappingURL=aggregate.js.map