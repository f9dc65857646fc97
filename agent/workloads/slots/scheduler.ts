// Sharing one SoC between workloads: each model slot takes a bounded number of concurrent requests with a
// bounded queue behind them (callers beyond it are refused with a retry hint: HTTP 429 + Retry-After), and a
// voice turn has priority: while one runs, background vision (watch mode) waits.
import { WorkloadError } from '../shared/errors.js';

export interface GateOptions {
  concurrency: number;
  maxQueued: number;
  retryAfterS: number;
}

export class SlotGate {
  readonly name: string;
  readonly #o: GateOptions;
  #running = 0;
  readonly #queue: Array<{ resolve: () => void; reject: (e: unknown) => void; signal?: AbortSignal }> = [];
  rejected = 0;

  constructor(name: string, options: GateOptions) {
    this.name = name;
    this.#o = options;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Waits for a turn; throws EBUSY at once when the queue is full. Call the returned function when done. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#running >= this.#o.concurrency) {
      if (this.#queue.length >= this.#o.maxQueued) {
        this.rejected++;
        throw new WorkloadError(
          'EBUSY',
          `The ${this.name} model is busy: ${this.#running} running and ${this.#queue.length} waiting; retry in ${this.#o.retryAfterS} s`,
          { retryAfterS: this.#o.retryAfterS },
        );
      }
      // A long-lived signal (a watch loop's, a session's) sees many waits: each wait takes its listener
      // away when it ends, or the listeners (and what they hold) pile up on the signal.
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const i = this.#queue.indexOf(entry);
          if (i >= 0) this.#queue.splice(i, 1);
          reject(signal?.reason);
        };
        const entry = {
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          reject,
          ...(signal ? { signal } : {}),
        };
        this.#queue.push(entry);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    } else {
      this.#running++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      // The slot passes straight to the next waiter, so #running stays the same.
      if (next) next.resolve();
      else this.#running--;
    };
  }
}

/** Voice first: background work asks `waitForVoiceIdle()` before it starts on the shared SoC. */
export class VoicePriority {
  #active = 0;
  #waiters: Array<() => void> = [];
  pausedWaits = 0;

  begin(): void {
    this.#active++;
  }

  end(): void {
    this.#active = Math.max(0, this.#active - 1);
    if (this.#active === 0) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w();
    }
  }

  get voiceActive(): boolean {
    return this.#active > 0;
  }

  async waitForVoiceIdle(signal?: AbortSignal): Promise<void> {
    if (this.#active === 0) return;
    this.pausedWaits++;
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((w) => w !== done);
        reject(signal?.reason);
      };
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#waiters.push(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
