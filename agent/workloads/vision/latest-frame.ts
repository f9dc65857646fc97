// At most one pending frame per session: a camera produces frames faster than a VLM answers, and an old frame
// is worth less than a new one, so a newer frame replaces the waiting one and the replaced one is counted.
import type { TimedFrame } from './frame-sources.js';

export class LatestFrame {
  #pending: TimedFrame | undefined;
  #waiter: ((f: TimedFrame | undefined) => void) | undefined;
  #closed = false;
  dropped = 0;
  accepted = 0;

  put(frame: TimedFrame): void {
    if (this.#closed) return;
    this.accepted++;
    if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w(frame);
      return;
    }
    if (this.#pending) this.dropped++;
    this.#pending = frame;
  }

  /** The newest frame, waiting for one if none is pending; undefined once closed. */
  take(): Promise<TimedFrame | undefined> {
    if (this.#pending) {
      const f = this.#pending;
      this.#pending = undefined;
      return Promise.resolve(f);
    }
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.#waiter = resolve;
    });
  }

  /** No more frames will come; the pending one is still taken. */
  end(): void {
    this.#closed = true;
    if (!this.#pending) {
      this.#waiter?.(undefined);
      this.#waiter = undefined;
    }
  }

  get hasPending(): boolean {
    return this.#pending !== undefined;
  }

  /** Stop now: the pending frame is discarded. */
  close(): void {
    this.#closed = true;
    this.#pending = undefined;
    this.#waiter?.(undefined);
    this.#waiter = undefined;
  }
}
