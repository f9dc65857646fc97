// The rules of a rollout that a fleet operator trusts at a thousand devices, as pure functions of the stored
// rollout and the time (rollout.ts applies them to SQLite): which failures count toward which abort criterion,
// which are transient and retried with backoff, when a job has waited too long for a final state, and how
// many jobs may go out now under a constant rate or an exponential ramp (AWS IoT Jobs' rollout config).

import { MnnEdgeError } from '../../lib/errors.js';
import { isTerminal, type JobState } from '../jobs/job.js';

/** A device's place in a rollout: not yet sent, sent and unanswered, the job's states, or the controller's. */
export type DeviceRolloutState = 'pending' | 'sent' | JobState | 'timed-out' | 'retrying';

export type FailureType = 'failed' | 'rejected' | 'rolled-back' | 'timed-out' | 'any';

export interface AbortCriterion {
  type: FailureType;
  /** Share (0–1) of started devices; above it the rollout stops. */
  threshold: number;
  /** Judged only once this many devices have started. */
  minStarted: number;
}

/** Jobs per minute: constant, or starting at `perMinute` and multiplied by `factor` every minute. */
export interface RateLimit {
  perMinute: number;
  factor?: number;
  /** The ramp's ceiling. */
  maxPerMinute?: number;
}

export const FAILED_STATES: readonly DeviceRolloutState[] = [
  'failed',
  'rolled-back',
  'rejected',
  'timed-out',
];

export function isFinal(s: DeviceRolloutState): boolean {
  if (s === 'timed-out') return true;
  if (s === 'pending' || s === 'sent' || s === 'retrying') return false;
  return isTerminal(s);
}

export function matchesType(state: DeviceRolloutState, type: FailureType): boolean {
  return type === 'any' ? FAILED_STATES.includes(state) : state === type;
}

/**
 * Download and connection errors are worth another try; a signature, a hash, a health gate never are (the same
 * bytes fail the same way). `slow-retrieval` and `deadline` are the network's, not the package's.
 */
export function isTransient(state: JobState, reason: string | undefined): boolean {
  if (state === 'failed') return reason === 'download' || reason === 'error';
  if (state === 'rejected') return reason === 'slow-retrieval' || reason === 'deadline';
  return false;
}

/** Full-jitter-free, predictable backoff for job retries: base·2^(attempt−1), capped at 10 minutes. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(600_000, baseMs * 2 ** Math.max(0, attempt - 1));
}

/** How many jobs may go out now: the rate of the current minute minus what went out in the last 60 s. */
export function sendAllowance(
  rate: RateLimit | undefined,
  startedAt: number,
  now: number,
  sentInLastMinute: number,
): number {
  if (!rate) return Number.POSITIVE_INFINITY;
  const minutes = Math.max(0, Math.floor((now - startedAt) / 60_000));
  const ramped = rate.perMinute * (rate.factor ?? 1) ** minutes;
  const perMinute = Math.floor(Math.min(rate.maxPerMinute ?? Number.POSITIVE_INFINITY, ramped));
  return Math.max(0, perMinute - sentInLastMinute);
}

/** `--abort rolled-back:10%,timed-out:20%,any:15%` (with `--abort-min N` for every entry). */
export function parseAbortCriteria(text: string, minStarted: number): AbortCriterion[] {
  return text.split(',').map((part) => {
    const m = /^(failed|rejected|rolled-back|timed-out|any):(\d{1,3}(?:\.\d+)?)%$/.exec(part.trim());
    if (!m || Number(m[2]) > 100)
      throw new MnnEdgeError(
        'EUSAGE',
        `Invalid abort criterion ${JSON.stringify(part.trim())}: expected TYPE:PERCENT% with TYPE one of failed, rejected, rolled-back, timed-out, any (e.g. rolled-back:10%)`,
      );
    return { type: m[1] as FailureType, threshold: Number(m[2]) / 100, minStarted };
  });
}

/** `--ramp 10,2`: 10 jobs in the first minute, doubling every minute. */
export function parseRamp(text: string): { perMinute: number; factor: number } {
  const m = /^(\d+),(\d+(?:\.\d+)?)$/.exec(text.trim());
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1)
    throw new MnnEdgeError('EUSAGE', `--ramp expects START,FACTOR (e.g. 10,2), got ${JSON.stringify(text)}`);
  return { perMinute: Number(m[1]), factor: Number(m[2]) };
}

/** `90s`, `10m`, `2h` or milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m || Number(m[1]) < 1)
    throw new MnnEdgeError(
      'EUSAGE',
      `--${flag} expects a duration like 90s, 10m or 2h, got ${JSON.stringify(text)}`,
    );
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

export interface AbortNumbers {
  type: FailureType;
  count: number;
  started: number;
  threshold: number;
  minStarted: number;
}

const TYPE_WORDS: Record<FailureType, string> = {
  failed: 'failed',
  rejected: 'were rejected',
  'rolled-back': 'failed the health gate and rolled back',
  'timed-out': 'timed out',
  any: 'failed',
};

/** The first criterion that trips, with its numbers; undefined when none does. */
export function tripped(
  criteria: readonly AbortCriterion[],
  started: readonly DeviceRolloutState[],
): AbortNumbers | undefined {
  for (const c of criteria) {
    if (started.length === 0 || started.length < c.minStarted) continue;
    const count = started.filter((s) => matchesType(s, c.type)).length;
    if (count / started.length > c.threshold)
      return {
        type: c.type,
        count,
        started: started.length,
        threshold: c.threshold,
        minStarted: c.minStarted,
      };
  }
  return undefined;
}

export function abortMessage(phase: number, n: AbortNumbers, legacy: boolean): string {
  if (legacy)
    return `stopped in phase ${phase + 1}: ${n.count} of ${n.started} devices failed (error threshold ${n.threshold})`;
  const pct = ((100 * n.count) / n.started).toFixed(1);
  return `stopped in phase ${phase + 1}: ${n.count} of ${n.started} started devices ${TYPE_WORDS[n.type]} (${pct} % > ${(n.threshold * 100).toFixed(1)} %${n.minStarted > 1 ? `, judged from ${n.minStarted} started` : ''})`;
}
