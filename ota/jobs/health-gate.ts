// The gate between "activated" and "committed": a model that loads but got slower or stopped answering is
// as bad for a fleet as one that fails to load. Pure, so every verdict can be tested with numbers.

import type { ProbeResult } from '../../lib/ota-ports.js';
import type { HealthNumbers } from './job.js';

export interface HealthPolicy {
  prompt: string;
  maxNewTokens: number;
  maxTtftMs: number;
  /** New decode tok/s must be at least this fraction of the previous version's measured figure. */
  minDecodeRatio: number;
  timeoutMs: number;
  referenceImage?: string;
  /** Activation or health checks interrupted this many times (crashes, power cuts) count as a failure. */
  maxAttempts: number;
}

export const defaultHealthPolicy: HealthPolicy = {
  prompt: 'Hello',
  maxNewTokens: 16,
  maxTtftMs: 5000,
  minDecodeRatio: 0.8,
  timeoutMs: 60_000,
  maxAttempts: 3,
};

export interface GateVerdict {
  pass: boolean;
  message: string;
  numbers: HealthNumbers;
}

export function judgeHealth(
  result: ProbeResult,
  policy: Pick<HealthPolicy, 'maxTtftMs' | 'minDecodeRatio'>,
  baseline: { version: string; decodeTokensPerSecond: number } | undefined,
): GateVerdict {
  const numbers: HealthNumbers = {
    ttftMs: result.ttftMs,
    decodeTokensPerSecond: result.decodeTokensPerSecond,
    maxTtftMs: policy.maxTtftMs,
    minDecodeRatio: policy.minDecodeRatio,
    ...(baseline ? { baselineDecodeTokensPerSecond: baseline.decodeTokensPerSecond } : {}),
  };
  const r1 = (n: number) => (Math.round(n * 10) / 10).toString();
  const failures: string[] = [];
  if (result.text.length === 0) failures.push('the probe produced no text');
  if (!(result.ttftMs <= policy.maxTtftMs))
    failures.push(`TTFT ${r1(result.ttftMs)} ms > max ${policy.maxTtftMs} ms`);
  if (baseline && baseline.decodeTokensPerSecond > 0) {
    const floor = policy.minDecodeRatio * baseline.decodeTokensPerSecond;
    if (!(result.decodeTokensPerSecond >= floor)) {
      failures.push(
        `decode ${r1(result.decodeTokensPerSecond)} tok/s < ${policy.minDecodeRatio} × ${r1(baseline.decodeTokensPerSecond)} tok/s of ${baseline.version}`,
      );
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
