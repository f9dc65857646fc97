import type { EngineAvailability } from '../../../engine/index.js';
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { TypedEventEmitter } from '../../../lib/typed-events.js';
import type { EngineBackendProbe } from '../../detect/index.js';
import type { BackendHealthEvent, RuntimeEvents } from '../reconciling/events.js';

export type { BackendHealthEvent };

import type { FailureBook } from '../desired/failures.js';
import type { BackendHealthOptions, BackendHealthState, BackendProbeFn } from '../desired/types.js';

// What an engine host found about each GPU backend, in detect's terms, so the capability document, the planner
// and the dashboard show the same chain and the same first failing step.

/** The engine's per-backend chains (empty when the engine is missing or predates probeBackend). */
export function engineProbes(availability: EngineAvailability | undefined): EngineBackendProbe[] {
  if (!availability?.available) return [];
  return (availability.info.probes ?? []).map((p) => ({
    name: p.name,
    compiledIn: p.compiledIn,
    deviceKind: p.deviceKind,
    steps: p.steps.map((s) => ({ step: s.step, status: s.status, detail: s.detail, evidence: [] })),
  }));
}

/** Backends the installed MNN has compiled in (a runtime creator registered, device or not). */
export function engineCompiledIn(availability: EngineAvailability | undefined): string[] | undefined {
  if (!availability?.available) return undefined;
  const compiled = availability.info.backends.filter((b) => b.compiledIn).map((b) => b.name as string);
  // A chain that got past "compiled in" is the better witness (older addons asked a check that hid OpenCL).
  for (const p of availability.info.probes ?? [])
    if (p.compiledIn && !compiled.includes(p.name)) compiled.push(p.name);
  return compiled;
}

/** The backend a candidate key runs on: `model@v/variant|vulkan t1 …` → `vulkan`. */
export function backendOfKey(key: string): string {
  return key.split('|')[1]?.split(' ')[0] ?? 'cpu';
}

/**
 * Which GPU backends are held down after a live failure, and when they may be used again: only after
 * `successesNeeded` probes in a row in fresh engine hosts, and not before `minDownMs`. The CPU is never held.
 */
export class BackendHealth {
  readonly #opts: Required<BackendHealthOptions>;
  readonly #down = new Map<string, BackendHealthState>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #listeners = new Set<(e: BackendHealthEvent) => void>();
  #stopped = false;

  constructor(options: BackendHealthOptions) {
    this.#opts = { probeIntervalMs: 5_000, successesNeeded: 2, minDownMs: 10_000, ...options };
  }

  onEvent(listener: (e: BackendHealthEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(e: BackendHealthEvent): void {
    for (const l of this.#listeners) l(e);
  }

  /** A candidate on this backend failed live (host died, backend fault, load refused): hold the backend. */
  markDown(backend: string, reason: string): void {
    if (backend === 'cpu' || this.#stopped) return;
    const existing = this.#down.get(backend);
    if (existing) {
      existing.successes = 0;
      existing.status = 'down';
      return;
    }
    this.#down.set(backend, {
      backend,
      status: 'down',
      reason,
      downSinceMs: this.#opts.clock.monotonicMs(),
      successes: 0,
    });
    this.#opts.log.warn('backend down: held until probes pass', {
      backend,
      reason,
      probeIntervalMs: this.#opts.probeIntervalMs,
      successesNeeded: this.#opts.successesNeeded,
    });
    this.#emit({ backend, status: 'down', reason });
    this.#schedule(backend);
  }

  holds(key: string): BackendHealthState | undefined {
    return this.#down.get(backendOfKey(key));
  }

  state(): BackendHealthState[] {
    return [...this.#down.values()].map((s) => ({ ...s }));
  }

  #schedule(backend: string): void {
    if (this.#stopped) return;
    clearTimeout(this.#timers.get(backend));
    const timer = setTimeout(() => void this.#probeOnce(backend), this.#opts.probeIntervalMs);
    this.#timers.set(backend, timer);
  }

  async #probeOnce(backend: string): Promise<void> {
    const s = this.#down.get(backend);
    if (!s || this.#stopped) return;
    let result: { ok: boolean; detail: string };
    try {
      result = await this.#opts.probe(backend);
    } catch (err) {
      result = { ok: false, detail: errorMessage(err) };
    }
    if (this.#stopped || this.#down.get(backend) !== s) return;
    const now = this.#opts.clock.monotonicMs();
    s.lastProbe = { ...result, atMs: now };
    s.successes = result.ok ? s.successes + 1 : 0;
    s.status = s.successes > 0 ? 'recovering' : 'down';
    this.#emit({
      backend,
      status: 'probe',
      ok: result.ok,
      detail: result.detail,
      successes: s.successes,
      needed: this.#opts.successesNeeded,
    });
    if (s.successes >= this.#opts.successesNeeded && now - s.downSinceMs >= this.#opts.minDownMs) {
      this.#down.delete(backend);
      this.#timers.delete(backend);
      const downForMs = now - s.downSinceMs;
      this.#opts.log.info('backend back: probes passed', { backend, downForMs, detail: result.detail });
      this.#emit({ backend, status: 'up', downForMs, detail: result.detail });
      return;
    }
    this.#schedule(backend);
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }
}

/** A probe in a fresh engine host: the backend is back when its whole chain passes, init probe included. */
export function engineBackendProbe(info: () => Promise<EngineAvailability>): BackendProbeFn {
  return async (backend) => {
    const a = await info();
    if (!a.available) return { ok: false, detail: a.reason };
    const p = a.info.probes?.find((x) => x.name === backend);
    if (!p) return { ok: false, detail: `the engine did not probe ${backend}` };
    const failed = p.steps.find((s) => s.status === 'fail');
    if (failed) return { ok: false, detail: `${failed.step}: ${failed.detail}` };
    const init = p.steps.find((s) => s.step === 'init-probe');
    return init ? { ok: true, detail: init.detail } : { ok: false, detail: 'no init probe ran' };
  };
}

/** Wires a BackendHealth into a runtime: held backends block their candidates, events go out, and a backend
 *  that passed its probes has its failures forgotten and the reconciler woken to move back to it. */
export function attachBackendHealth(
  runtime: { events: TypedEventEmitter<RuntimeEvents> },
  deps: { clock: Clock; log: Logger; backendHealth?: Omit<BackendHealthOptions, 'clock' | 'log'> },
  failures: FailureBook,
  wake: () => void,
): BackendHealth | undefined {
  if (!deps.backendHealth) return undefined;
  const health = new BackendHealth({
    ...deps.backendHealth,
    clock: deps.clock,
    log: deps.log.child('backends'),
  });
  failures.holdWith((key) => {
    const s = health.holds(key);
    return s ? { reason: `${s.backend} is down (${s.reason}); waiting for probes to pass` } : undefined;
  });
  health.onEvent((e) => {
    runtime.events.emit('backend-health', e);
    if (e.status === 'up') {
      failures.forget((key) => backendOfKey(key) === e.backend);
      wake();
    }
  });
  return health;
}
