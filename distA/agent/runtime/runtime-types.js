import { defaultFailureBackoff } from './failures.js';
export const defaultRuntimeOptions = {
    drainTimeoutMs: 10_000,
    drainGraceMs: 2_000,
    acquireTimeoutMs: 60_000,
    memoryReserveBytes: 256 * 1024 * 1024,
    warmUp: { prompt: 'Hello', maxNewTokens: 2 },
    release: { timeoutMs: 2_000, pollMs: 50, tolerance: 0.1 },
    runnerBackoff: { baseMs: 500, maxMs: 60_000 },
    startupTimeoutMs: 5 * 60_000,
    stuckAfterMs: 15 * 60_000,
    tickMs: 10_000,
    failureBackoff: defaultFailureBackoff,
};
//# sourceMappingURL=runtime-types.js.map