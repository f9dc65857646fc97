export const LAST_KNOWN_GOOD_KEY = 'time.lastKnownGood';
/** 2026-11-01T00:00:00Z: earlier than this release; bump with each release. */
export const RELEASE_FLOOR_MS = Date.UTC(2026, 10, 1);
function readStored(kv) {
    const v = kv.get(LAST_KNOWN_GOOD_KEY);
    if (typeof v !== 'object' || v === null)
        return undefined;
    const { ms, source } = v;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || (source !== 'ntp' && source !== 'carried'))
        return undefined;
    return { ms, source };
}
export function createTrustedTime(options) {
    const { kv, clock, probe } = options;
    const floorMs = options.floorMs ?? RELEASE_FLOOR_MS;
    const persistIntervalMs = options.persistIntervalMs ?? 10 * 60_000;
    // The bound is (baseMs at baseMono), advanced by monotonic time: it keeps counting while the wall clock is wrong.
    let stored = readStored(kv);
    let baseMs = Math.max(floorMs, stored?.ms ?? 0);
    let baseMono = clock.monotonicMs();
    let timer;
    const boundMs = () => baseMs + (clock.monotonicMs() - baseMono);
    const trustedNow = () => Math.max(clock.nowMs(), boundMs());
    const clockStatus = () => {
        const wallMs = clock.nowMs();
        const bound = boundMs();
        const observed = probe();
        let state;
        if (observed.synchronized === true)
            state = 'synchronized';
        else if (wallMs < bound)
            state = 'behind';
        else
            state = observed.synchronized === false ? 'unsynchronized' : 'unknown';
        const evidence = state === 'behind'
            ? `wall clock ${new Date(wallMs).toISOString()} is earlier than the last known good time ${new Date(bound).toISOString()}; ${observed.evidence}`
            : observed.evidence;
        // An NTP-confirmed clock is authoritative even below a bound that an earlier, wrong clock may have left.
        const trustedMs = state === 'synchronized' ? wallMs : Math.max(wallMs, bound);
        return {
            state,
            synchronized: state === 'synchronized',
            evidence,
            wallMs,
            trustedMs,
            lagMs: Math.max(0, trustedMs - wallMs),
            lastKnownGoodMs: stored?.ms,
        };
    };
    const checkpoint = () => {
        const status = clockStatus();
        const next = status.synchronized
            ? { ms: status.wallMs, source: 'ntp' }
            : { ms: boundMs(), source: 'carried' };
        // Without NTP the bound only moves forward; with NTP the clock is right and may correct a bound that ran ahead.
        if (!status.synchronized && stored !== undefined && next.ms <= stored.ms)
            return;
        kv.set(LAST_KNOWN_GOOD_KEY, next);
        if (status.synchronized && stored?.source !== 'ntp') {
            options.logger?.info('clock synchronised', { wallMs: status.wallMs, evidence: status.evidence });
        }
        stored = next;
        if (status.synchronized) {
            baseMs = next.ms;
            baseMono = clock.monotonicMs();
        }
    };
    return {
        trustedNow,
        clockStatus,
        checkpoint,
        start() {
            const status = clockStatus();
            if (status.state === 'behind') {
                options.logger?.warn('wall clock is behind the last known good time', {
                    wallMs: status.wallMs,
                    trustedMs: status.trustedMs,
                });
            }
            checkpoint();
            timer ??= setInterval(checkpoint, persistIntervalMs);
            timer.unref();
        },
        stop() {
            if (timer !== undefined)
                clearInterval(timer);
            timer = undefined;
            checkpoint();
        },
    };
}
//# sourceMappingURL=trusted-time.js.map