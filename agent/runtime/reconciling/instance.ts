import type { InstanceStatus, Lease } from '../desired/types.js';
import {
  EngineFailure,
  type EngineHost,
  type InstanceLoad,
  type InstanceSpec,
} from '../engine/engine-port.js';
import type { LoadSplit } from '../engine/load-split.js';

export interface DrainResult {
  waitedMs: number;
  /** Requests still running at the deadline, which were cancelled. */
  cancelled: number;
}

/** One loaded model in one engine host, with the leases that use it. */
export class Instance {
  readonly spec: InstanceSpec;
  readonly host: EngineHost;
  status: InstanceStatus = 'starting';
  readonly startedAtMs: number;
  peakRssBytes = 0;
  rssBytes = 0;
  /** RssAnon when the host reports it, else its RSS. */
  anonBytes = 0;
  /** How long its model took to load, and with which kernel cache state. */
  load: InstanceLoad | undefined;
  /** Where its start went, step by step (host start, read, MNN's load, warm-up), filled in as it happens. */
  readonly loadSplit: LoadSplit = {};
  readonly #leases = new Set<AbortController>();
  #idle: (() => void)[] = [];

  constructor(spec: InstanceSpec, host: EngineHost, startedAtMs: number) {
    this.spec = spec;
    this.host = host;
    this.startedAtMs = startedAtMs;
  }

  get inflight(): number {
    return this.#leases.size;
  }

  lease(): Lease {
    const ctl = new AbortController();
    this.#leases.add(ctl);
    let released = false;
    return {
      instanceKey: this.spec.key,
      host: this.host,
      signal: ctl.signal,
      release: () => {
        if (released) return;
        released = true;
        this.#leases.delete(ctl);
        if (this.#leases.size === 0) for (const wake of this.#idle.splice(0)) wake();
      },
    };
  }

  /** Abort every open lease (the host died, or a drain ran out of time). */
  cancelAll(reason: EngineFailure): number {
    const n = this.#leases.size;
    for (const ctl of this.#leases) ctl.abort(reason);
    return n;
  }

  /** Wait for in-flight requests to finish; at the deadline cancel the rest and give them `graceMs` to unwind. */
  async drain(timeoutMs: number, graceMs: number, now: () => number): Promise<DrainResult> {
    const start = now();
    if (this.#leases.size === 0) return { waitedMs: 0, cancelled: 0 };
    const idle = new Promise<void>((resolve) => this.#idle.push(resolve));
    const finished = await waitFor(idle, timeoutMs);
    if (finished) return { waitedMs: now() - start, cancelled: 0 };
    const cancelled = this.cancelAll(
      new EngineFailure(
        'cancelled',
        `request cancelled: ${this.spec.key} was being replaced and the ${timeoutMs} ms drain deadline passed`,
      ),
    );
    await waitFor(idle, graceMs);
    return { waitedMs: now() - start, cancelled };
  }
}

function waitFor(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void p.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
