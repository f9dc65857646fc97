import type { SlotName } from '../../plan/types.js';
import type { ActiveChoice } from '../desired/types.js';
import { describeExit, EngineFailure, type HostExit } from '../engine/engine-port.js';
import type { Instance } from './instance.js';
import type { RuntimeCore } from './instance-table.js';

/**
 * Failure and fallback bookkeeping: a host that dies or reports a backend fault is taken out of service and
 * its failure recorded (so the target falls down the chain), fallbacks and recoveries are announced, and the
 * preferred candidate is retried when its backoff ends.
 */
export class Failover {
  readonly #core: RuntimeCore;
  #choices: ActiveChoice[] = [];
  #retryTimer: NodeJS.Timeout | undefined;
  /** Told of each fallback (backend health holds a GPU backend that failed live). */
  onFallback: ((fromKey: string, reason: string) => void) | undefined;

  constructor(core: RuntimeCore) {
    this.#core = core;
  }

  /** What serves each planned instance now (the preferred candidate or a fallback). */
  choices(): ActiveChoice[] {
    return this.#choices;
  }

  announce(choices: ActiveChoice[]): void {
    const { deps, log, events } = this.#core;
    const before = new Map(this.#choices.map((c) => [c.plannedKey, c]));
    for (const c of choices) {
      const prev = before.get(c.plannedKey);
      if (c.fallback && prev?.active.key !== c.active.key) {
        this.onFallback?.(c.fallback.fromKey, c.fallback.reason);
        // -1: held until its backend's probes pass, not on a timer.
        const retryInMs = Number.isFinite(c.fallback.retryAtMs)
          ? Math.max(0, c.fallback.retryAtMs - deps.clock.monotonicMs())
          : -1;
        log.warn('fallback', {
          slots: c.slots,
          from: c.fallback.fromKey,
          to: c.active.key,
          reason: c.fallback.reason,
        });
        events.emit('fallback', {
          slots: c.slots,
          fromKey: c.fallback.fromKey,
          toKey: c.active.key,
          reason: c.fallback.reason,
          retryInMs,
        });
      } else if (!c.fallback && prev?.fallback) {
        log.info('back on the preferred placement', { slots: c.slots, key: c.active.key });
        events.emit('recovered', { slots: c.slots, key: c.active.key });
      }
    }
    this.#choices = choices;
  }

  scheduleRetryOfPreferred(): void {
    this.stop();
    const at = this.#core.failures.nextRetryAtMs();
    if (at === undefined || this.#core.stopped()) return;
    const inMs = Math.max(0, at - this.#core.deps.clock.monotonicMs()) + 5;
    this.#retryTimer = setTimeout(() => this.#core.trigger(), inMs);
  }

  stop(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  /**
   * Restart the engine hosts serving these slots (an operator's `restart-workload`): their in-flight requests
   * are cancelled with the reason, new requests wait, and the reconciler starts fresh hosts with the same
   * choice — the crash-recovery path, without counting a failure against the backend.
   */
  restart(slots: readonly SlotName[], reason: string): string[] {
    const { table } = this.#core;
    const keys = new Set<string>();
    for (const slot of slots) {
      const key = table.serving[slot];
      if (key !== undefined) keys.add(key);
    }
    for (const key of keys) {
      const inst = table.instances.get(key);
      if (!inst) continue;
      table.unserve(key);
      table.setStatus(inst, 'failed', `restart requested: ${reason}`);
      inst.cancelAll(new EngineFailure('cancelled', `request cancelled: ${reason}`));
      this.#core.log.info('restarting instance', { instance: key, reason });
    }
    this.#core.trigger();
    return [...keys];
  }

  onExit(inst: Instance, exit: HostExit): void {
    const expected = this.#core.table.expectedExit.has(inst);
    this.#core.events.emit('host-exit', { instanceKey: inst.spec.key, pid: inst.host.pid, exit, expected });
    if (expected || this.#core.stopped()) return;
    const starting = inst.status === 'starting' || inst.status === 'loading' || inst.status === 'warming';
    const reason = `engine host pid ${inst.host.pid} for ${inst.spec.key} exited unexpectedly (${describeExit(exit)})`;
    // During startup the step in progress sees the failure and records it; here only a serving host's death.
    if (starting) return;
    this.#markFailed(inst, new EngineFailure('crash', `request failed: ${reason}`), reason);
  }

  backendFault(key: string, err: EngineFailure): void {
    const inst = this.#core.table.instances.get(key);
    if (!inst || inst.status === 'failed') return;
    this.#markFailed(inst, err, `backend fault on ${key}: ${err.message}`);
  }

  /** The instance can no longer serve: unserve its slots at once (new requests wait for the fallback instead of
   *  failing), cut its in-flight requests with a clear error, record the failure and reconcile. */
  #markFailed(inst: Instance, requestError: EngineFailure, reason: string): void {
    const key = inst.spec.key;
    this.#core.table.unserve(key);
    this.#core.table.setStatus(inst, 'failed', reason);
    inst.cancelAll(requestError);
    const rec = this.#core.failures.record(key, reason);
    this.#core.log.error('instance failed', { instance: key, reason, failures: rec.count });
    this.#core.trigger();
  }
}
