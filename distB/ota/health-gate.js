// The gate between "activated" and "committed": a model that loads but got slower or stopped answering is
// as bad for a fleet as one that fails to load. Pure, so every verdict can be tested with numbers.
export const defaultHealthPolicy = {
    prompt: 'Hello',
    maxNewTokens: 16,
    maxTtftMs: 5000,
    minDecodeRatio: 0.8,
    timeoutMs: 60_000,
    maxAttempts: 3,
};
export function judgeHealth(result, policy, baseline) {
    const numbers = {
        ttftMs: result.ttftMs,
        decodeTokensPerSecond: result.decodeTokensPerSecond,
        maxTtftMs: policy.maxTtftMs,
        minDecodeRatio: policy.minDecodeRatio,
        ...(baseline ? { baselineDecodeTokensPerSecond: baseline.decodeTokensPerSecond } : {}),
    };
    const r1 = (n) => (Math.round(n * 10) / 10).toString();
    const failures = [];
    if (result.text.length === 0)
        failures.push('the probe produced no text');
    if (!(result.ttftMs <= policy.maxTtftMs))
        failures.push(`TTFT ${r1(result.ttftMs)} ms > max ${policy.maxTtftMs} ms`);
    if (baseline && baseline.decodeTokensPerSecond > 0) {
        const floor = policy.minDecodeRatio * baseline.decodeTokensPerSecond;
        if (!(result.decodeTokensPerSecond >= floor)) {
            failures.push(`decode ${r1(result.decodeTokensPerSecond)} tok/s < ${policy.minDecodeRatio} × ${r1(baseline.decodeTokensPerSecond)} tok/s of ${baseline.version}`);
        }
    }
    return failures.length === 0
        ? {
            pass: true,
            message: `TTFT ${r1(result.ttftMs)} ms, decode ${r1(result.decodeTokensPerSecond)} tok/s`,
            numbers,
        }
        : { pass: false, message: failures.join('; '), numbers };
}
//# sourceMappingURL=health-gate.js.map