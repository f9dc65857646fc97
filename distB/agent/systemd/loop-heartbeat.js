import { invalidParameter } from '../common/errors.js';
export function createLoopHeartbeat(options) {
    const { clock, maxSilenceMs } = options;
    if (!Number.isFinite(maxSilenceMs) || maxSilenceMs <= 0) {
        throw invalidParameter('maxSilenceMs', 'a positive number of milliseconds', maxSilenceMs);
    }
    let last = clock.monotonicMs();
    const silenceMs = () => clock.monotonicMs() - last;
    return {
        beat: () => {
            last = clock.monotonicMs();
        },
        healthy: () => silenceMs() <= maxSilenceMs,
        silenceMs,
    };
}
//# sourceMappingURL=loop-heartbeat.js.map