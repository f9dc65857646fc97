import { errorMessage } from '../common/errors.js';
import { PROTOCOL_VERSION } from '../common/wire.js';
import { MetricAggregator } from './aggregate.js';
import { vacuumIfWorthIt } from './maintenance.js';
import { encodeTelemetry } from './message.js';
import { slotGauges, } from './runtime-stats.js';
export class TelemetryService {
    #o;
    #agg = new MetricAggregator();
    #slots = [];
    #intervalStart;
    #latest;
    #timers = [];
    #sampling;
    constructor(options) {
        this.#o = options;
        this.#intervalStart = options.clock.nowMs();
    }
    start() {
        if (this.#timers.length > 0)
            return;
        const { sampleIntervalMs, publishIntervalMs, maintenanceIntervalMs } = this.#o.config;
        const every = (ms, fn) => {
            const t = setInterval(fn, ms);
            t.unref();
            this.#timers.push(t);
        };
        every(sampleIntervalMs, () => void this.sample());
        every(publishIntervalMs, () => {
            this.publish().catch((err) => this.#o.logger.error('telemetry publish failed', { error: errorMessage(err) }));
        });
        every(maintenanceIntervalMs, () => this.maintain());
        void this.sample();
    }
    stop() {
        for (const t of this.#timers.splice(0))
            clearInterval(t);
    }
    /** One round of every sampler; a failing sampler is logged and skipped, the others still count. */
    sample() {
        // Overlapping rounds (a slow sampler on a loaded board) would double-count; skip instead.
        this.#sampling ??= this.#sampleOnce().finally(() => {
            this.#sampling = undefined;
        });
        return this.#sampling;
    }
    async #sampleOnce() {
        const results = await Promise.allSettled(this.#o.samplers.map((s) => s.sample()));
        results.forEach((r, i) => {
            if (r.status === 'fulfilled')
                this.#agg.addAll(r.value);
            else
                this.#o.logger.debug('sampler failed', {
                    sampler: this.#o.samplers[i].name,
                    error: errorMessage(r.reason),
                });
        });
        try {
            if (this.#o.runtime) {
                this.#slots = this.#o.runtime.slots();
                this.#agg.addAll(slotGauges(this.#slots));
            }
            if (this.#o.workloads)
                this.#agg.addAll(this.#o.workloads.metrics());
        }
        catch (err) {
            this.#o.logger.debug('runtime stats failed', { error: errorMessage(err) });
        }
    }
    /** Ends the interval: one telemetry message into the outbox, one point into the history. */
    async publish() {
        await this.#sampling;
        const now = this.#o.clock.nowMs();
        const metrics = this.#agg.take();
        const intervalMs = Math.max(1, now - this.#intervalStart);
        this.#intervalStart = now;
        if (Object.keys(metrics).length === 0)
            return undefined;
        const slots = {};
        for (const s of this.#slots) {
            slots[s.slot] = {
                requests: s.requests,
                errors: s.errors,
                ...(s.model !== undefined ? { model: s.model } : {}),
                ...(s.variant !== undefined ? { variant: s.variant } : {}),
                ...(s.backend !== undefined ? { backend: s.backend } : {}),
            };
        }
        this.#latest = { ts: now, metrics, slots };
        try {
            this.#o.history.record(metrics, now);
        }
        catch (err) {
            this.#o.logger.warn('history write failed', { error: errorMessage(err) });
        }
        const { outbox, deviceId, topic, config } = this.#o;
        const stats = outbox.stats();
        const seq = outbox.enqueue(topic, (seq) => {
            const message = {
                v: PROTOCOL_VERSION,
                deviceId,
                seq,
                ts: now,
                intervalMs,
                expiresAt: now + config.outbox.messageExpirySec * 1000,
                metrics,
                slots,
                outbox: { queued: stats.queued + stats.pending, dropped: stats.dropped },
            };
            return encodeTelemetry(message);
        });
        try {
            this.#o.onSnapshot?.(this.#latest);
        }
        catch (err) {
            this.#o.logger.warn('telemetry snapshot listener failed', { error: errorMessage(err) });
        }
        return seq;
    }
    /** Retention and VACUUM; called on the maintenance schedule. */
    maintain() {
        try {
            this.#o.outbox.flush();
            const expired = this.#o.outbox.expire();
            const pruned = this.#o.history.prune();
            const { vacuumed } = vacuumIfWorthIt(this.#o.db);
            this.#o.logger.debug('telemetry maintenance', { expired, pruned, vacuumed });
            return { expired, pruned, vacuumed };
        }
        catch (err) {
            this.#o.logger.warn('telemetry maintenance failed', { error: errorMessage(err) });
            return { expired: 0, pruned: 0, vacuumed: false };
        }
    }
    latest() {
        return this.#latest;
    }
}
//# sourceMappingURL=service.js.map