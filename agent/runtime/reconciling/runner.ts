import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { RunnerHealth } from '../desired/types.js';

export interface RunnerOptions {
  clock: Clock;
  /** Delay before retrying a failed run: baseMs × 2^(failures−1), at most maxMs. */
  backoff: { baseMs: number; maxMs: number };
  /** A run taking longer than this makes the loop unhealthy (a hung driver, a drain that never ends). */
  stuckAfterMs: number;
  onError?: (err: unknown, consecutiveFailures: number, retryInMs: number) => void;
  /** Called as each run begins, whatever started it (a trigger, a coalesced trigger, a backoff retry). */
  onRunStart?: () => void;
}

/**
 * Runs one job at a time, never two at once. Triggers while a run is in progress coalesce into one more run
 * after it. A failed run is retried with exponential backoff; a new trigger skips the wait (it brings new
 * information). The current run can be cancelled through its AbortSignal.
 */
export class ExclusiveRunner {
  readonly #job: (signal: AbortSignal) => Promise<void>;
  readonly #opts: RunnerOptions;
  #running: AbortController | undefined;
  #runStartedAtMs = 0;
  #dirty = false;
  #immediate: NodeJS.Immediate | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryAtMs: number | undefined;
  #stopped = false;
  #runs = 0;
  #failures = 0;
  #lastError: string | undefined;
  #lastOkAtMs: number | undefined;
  #settledWaiters: (() => void)[] = [];
  #current: Promise<void> | undefined;

  constructor(job: (signal: AbortSignal) => Promise<void>, opts: RunnerOptions) {
    this.#job = job;
    this.#opts = opts;
  }

  trigger(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#dirty = true;
      return;
    }
    if (this.#retryTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      this.#retryAtMs = undefined;
    }
    this.#immediate ??= setImmediate(() => {
      this.#immediate = undefined;
      this.#current = this.#run();
    });
  }

  /** Abort the run in progress (its steps see the signal); queued work still runs afterwards. */
  cancelCurrent(reason = 'cancelled'): void {
    this.#running?.abort(new Error(reason));
  }

  /** Resolves when nothing runs and nothing is queued (a pending backoff retry does not count). */
  settled(): Promise<void> {
    if (!this.#running && !this.#immediate) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#immediate = undefined;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.cancelCurrent('runner stopped');
    await this.#current;
  }

  health(): RunnerHealth {
    const now = this.#opts.clock.monotonicMs();
    const runningForMs = this.#running ? now - this.#runStartedAtMs : 0;
    const stuck = runningForMs > this.#opts.stuckAfterMs;
    const reason = stuck
      ? `a run has been going for ${runningForMs} ms (limit ${this.#opts.stuckAfterMs} ms)`
      : this.#failures > 0
        ? `${this.#failures} failed run(s) in a row: ${this.#lastError}`
        : 'ok';
    return {
      healthy: !stuck && this.#failures < 5,
      running: this.#running !== undefined,
      runningForMs,
      runs: this.#runs,
      consecutiveFailures: this.#failures,
      lastError: this.#lastError,
      lastOkAtMs: this.#lastOkAtMs,
      retryAtMs: this.#retryAtMs,
      reason,
    };
  }

  async #run(): Promise<void> {
    const ctl = new AbortController();
    this.#running = ctl;
    this.#runStartedAtMs = this.#opts.clock.monotonicMs();
    this.#dirty = false;
    this.#runs++;
    this.#opts.onRunStart?.();
    let failure: { err: unknown } | undefined;
    try {
      await this.#job(ctl.signal);
      this.#failures = 0;
      this.#lastError = undefined;
      this.#lastOkAtMs = this.#opts.clock.monotonicMs();
    } catch (err) {
      failure = { err };
      this.#failures++;
      this.#lastError = errorMessage(err);
    } finally {
      this.#running = undefined;
    }
    if (this.#stopped) return this.#wakeSettled();
    if (this.#dirty) {
      this.trigger();
      return;
    }
    if (failure) {
      const { baseMs, maxMs } = this.#opts.backoff;
      const delay = Math.min(maxMs, baseMs * 2 ** (this.#failures - 1));
      this.#retryAtMs = this.#opts.clock.monotonicMs() + delay;
      this.#opts.onError?.(failure.err, this.#failures, delay);
      this.#retryTimer = setTimeout(() => {
        this.#retryTimer = undefined;
        this.#retryAtMs = undefined;
        this.trigger();
      }, delay);
    }
    this.#wakeSettled();
  }

  #wakeSettled(): void {
    if (this.#running || this.#immediate) return;
    for (const w of this.#settledWaiters.splice(0)) w();
  }
}
