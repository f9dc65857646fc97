import { sleep } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { SlotName } from '../../plan/types.js';
import { activeTarget } from '../desired/target.js';
import type { InstanceStatus, Step, StepPlan } from '../desired/types.js';
import { describeExit, type EngineHost, type InstanceSpec } from '../engine/engine-port.js';
import { graphProfileOf } from '../engine/graph-models.js';
import type { ReleaseCheck } from './events.js';
import type { Failover } from './failover.js';
import { Instance } from './instance.js';
import type { RuntimeCore } from './instance-table.js';
import { timedLoad } from './load-times.js';
import type { Planning } from './planning.js';
import { describeStep, planSteps } from './steps.js';

/** A startup step of a candidate failed and the failure was recorded: the next attempt can fall back. */
class CandidateFailed extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(message);
    this.key = key;
  }
}

const MAX_ATTEMPTS_PER_RUN = 6;

/**
 * One reconcile run: the target (placement minus failed candidates) against what runs, turned into steps
 * (steps.ts) and applied here: start, load and warm up hosts, switch slots, drain, unload, stop and check that
 * the memory came back. The exclusive runner (runner.ts) calls `run`, one at a time.
 */
export class Reconciler {
  readonly #core: RuntimeCore;
  readonly #planning: Planning;
  readonly #failover: Failover;
  #runStartMs = 0;

  constructor(core: RuntimeCore, planning: Planning, failover: Failover) {
    this.#core = core;
    this.#planning = planning;
    this.#failover = failover;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { deps, opts, log, events, failures, table } = this.#core;
    const kindOf = this.#planning.kindOf;
    for (let attempt = 0; attempt < MAX_ATTEMPTS_PER_RUN; attempt++) {
      signal.throwIfAborted();
      const placement = this.#planning.placement();
      if (!placement) return;
      const { target, choices } = activeTarget(placement, failures, kindOf);
      this.#failover.announce(choices);
      const current = table.current();
      const memory = async () => ({
        availableBytes: await deps.memory.memAvailableBytes(),
        reserveBytes: opts.memoryReserveBytes,
      });
      let plan = planSteps(current, target, await memory());
      // Memory too short to keep the old instance while a new one loads: conversation snapshots go first, and
      // the plan is made again with what they gave back, before any model is stopped for room.
      if (Object.values(plan.strategies).includes('stop-then-load') && (await this.#dropSnapshots()) > 0)
        plan = planSteps(current, target, await memory());
      if (plan.steps.length === 0) {
        this.#failover.scheduleRetryOfPreferred();
        return;
      }
      this.#runStartMs = deps.clock.monotonicMs();
      events.emit('plan', {
        steps: plan.steps.map(describeStep),
        notes: plan.notes,
        strategies: plan.strategies,
      });
      for (const note of plan.notes) log.info('swap strategy', { note });
      try {
        for (const step of plan.steps) await this.#execute(step, plan, signal);
      } catch (err) {
        if (!(err instanceof CandidateFailed)) throw err;
        // Try again at once if the failure changed what should run (a fallback exists); else let the
        // runner back off before the floor candidate is tried again.
        const again = activeTarget(placement, failures, kindOf).target;
        if (again.instances.some((i) => i.key === err.key)) throw err;
      }
    }
    throw new Error(`reconcile did not converge in ${MAX_ATTEMPTS_PER_RUN} attempts`);
  }

  /** Asks every ready LLM host to drop its conversation snapshots; the bytes they were counted at, summed. */
  async #dropSnapshots(): Promise<number> {
    let freed = 0;
    for (const inst of this.#core.table.instances.values()) {
      if (inst.status !== 'ready' || !inst.spec.conversations || !inst.host.dropSnapshots) continue;
      try {
        const bytes = await inst.host.dropSnapshots();
        freed += bytes;
        this.#core.log.info('conversation snapshots dropped for memory', { instance: inst.spec.key, bytes });
      } catch (err) {
        this.#core.log.warn('dropping conversation snapshots failed', {
          instance: inst.spec.key,
          error: errorMessage(err),
        });
      }
    }
    return freed;
  }

  /** The watchdog's tick: fresh RSS of the serving hosts for the dashboard. */
  sampleReady(): void {
    for (const inst of this.#core.table.instances.values())
      if (inst.status === 'ready') void this.#sampleMemory(inst);
  }

  async #execute(step: Step, plan: StepPlan, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    switch (step.kind) {
      case 'startHost':
        return this.#startHost(step.instance, signal);
      case 'load':
        return this.#startupStep(step.instance, 'loading', 'load failed', signal, (inst) =>
          timedLoad(inst, this.#core.table.loadTimes, this.#core.deps.clock, signal),
        );
      case 'warmUp':
        return this.#startupStep(step.instance, 'warming', 'warm-up failed', signal, async (inst) => {
          const t0 = this.#core.deps.clock.monotonicMs();
          const profile = graphProfileOf(inst.spec.kind);
          if (profile) await inst.host.forward(profile.warmUp(), signal);
          else
            for await (const _ of inst.host.generate(this.#core.opts.warmUp, signal)) {
              // Only completion matters: the instance answered.
            }
          inst.loadSplit.warmUpMs = Math.round(this.#core.deps.clock.monotonicMs() - t0);
          await this.#sampleMemory(inst);
          this.#core.table.setStatus(inst, 'ready');
        });
      case 'switch':
        return this.#switch(step.slots, step.to, plan);
      case 'drain': {
        const inst = this.#core.table.instances.get(step.instance);
        if (!inst) return;
        this.#core.table.setStatus(inst, 'draining');
        const r = await inst.drain(this.#core.opts.drainTimeoutMs, this.#core.opts.drainGraceMs, () =>
          this.#core.deps.clock.monotonicMs(),
        );
        this.#core.events.emit('drain', { instanceKey: inst.spec.key, ...r });
        return;
      }
      case 'unload': {
        const inst = this.#core.table.instances.get(step.instance);
        if (!inst || inst.status === 'failed') return;
        await inst.host.unload().catch((err: unknown) => {
          // The host is stopped next anyway; an unload error only matters for the log.
          this.#core.log.warn('unload failed', { instance: inst.spec.key, error: errorMessage(err) });
        });
        return;
      }
      case 'stopHost': {
        const inst = this.#core.table.instances.get(step.instance);
        if (inst) await this.#stopHost(inst);
        return;
      }
    }
  }

  async #startHost(spec: InstanceSpec, signal: AbortSignal): Promise<void> {
    let host: EngineHost;
    const t0 = this.#core.deps.clock.monotonicMs();
    try {
      host = await this.#core.deps.hosts.start({ label: spec.key, cpus: spec.config.cpus }, signal);
    } catch (err) {
      this.#candidateFailed(spec.key, `engine host did not start: ${errorMessage(err)}`, 'startHost');
    }
    const inst = new Instance(spec, host, this.#core.deps.clock.nowMs());
    inst.loadSplit.hostStartMs = Math.round(this.#core.deps.clock.monotonicMs() - t0);
    this.#core.table.instances.set(spec.key, inst);
    this.#core.table.transition(inst, 'absent', 'starting');
    void host.exited.then((exit) => this.#failover.onExit(inst, exit));
  }

  async #startupStep(
    key: string,
    status: InstanceStatus,
    what: string,
    signal: AbortSignal,
    fn: (inst: Instance) => Promise<void>,
  ): Promise<void> {
    const inst = this.#core.table.instances.get(key);
    if (!inst) throw new CandidateFailed(key, `${key}: ${what}: its engine host is gone`);
    this.#core.table.setStatus(inst, status);
    try {
      await bounded(fn(inst), this.#core.opts.startupTimeoutMs, signal);
    } catch (err) {
      const exit = await Promise.race([inst.host.exited, sleep(0).then(() => undefined)]);
      const reason = exit
        ? `${what}: engine host pid ${inst.host.pid} exited (${describeExit(exit)}): ${errorMessage(err)}`
        : `${what}: ${errorMessage(err)}`;
      this.#core.table.setStatus(inst, 'failed', reason);
      this.#core.table.expectedExit.add(inst);
      await this.#stopHost(inst);
      // Cancelled from outside (stop, watchdog): not the candidate's fault, nothing to record.
      if (signal.aborted) throw signal.reason;
      this.#candidateFailed(key, reason, what);
    }
  }

  #candidateFailed(key: string, reason: string, step: string): never {
    const rec = this.#core.failures.record(key, reason);
    this.#core.log.warn('candidate failed', { instance: key, reason, failures: rec.count });
    this.#core.events.emit('step-failed', { step, instanceKey: key, error: reason });
    throw new CandidateFailed(key, `${key}: ${reason}`);
  }

  #switch(slots: SlotName[], to: string | undefined, plan: StepPlan): void {
    const from = [
      ...new Set(slots.map((s) => this.#core.table.serving[s]).filter((k): k is string => k !== undefined)),
    ];
    for (const s of slots) {
      if (to === undefined) delete this.#core.table.serving[s];
      else this.#core.table.serving[s] = to;
    }
    this.#core.events.emit('switch', {
      slots,
      from,
      to,
      strategy: to === undefined ? undefined : plan.strategies[to],
      sinceRunStartMs: this.#core.deps.clock.monotonicMs() - this.#runStartMs,
    });
    this.#core.table.wakeServingWaiters();
  }

  async #sampleMemory(inst: Instance): Promise<void> {
    try {
      const m = await inst.host.memory();
      inst.rssBytes = m.rssBytes;
      inst.anonBytes = m.anonBytes ?? m.rssBytes;
      inst.peakRssBytes = Math.max(inst.peakRssBytes, m.peakRssBytes);
    } catch {
      // A host that cannot answer keeps its last numbers; a dead one is handled by its exit watcher.
    }
  }

  async #stopHost(inst: Instance): Promise<void> {
    const pid = inst.host.pid;
    if (inst.status !== 'failed') await this.#sampleMemory(inst);
    const held =
      inst.status === 'failed' ? { rss: 0, anon: 0 } : { rss: inst.rssBytes, anon: inst.anonBytes };
    this.#core.table.expectedExit.add(inst);
    if (inst.status !== 'failed') this.#core.table.setStatus(inst, 'stopping');
    const others = [...this.#core.table.instances.values()].filter(
      (i) => i !== inst && i.status !== 'failed',
    );
    const othersBefore = await this.#privateBytes(others);
    const before = await this.#core.deps.memory.memAvailableBytes();
    await inst.host.stop();
    const check = await this.#verifyReleased(inst.spec.key, pid, held, inst.peakRssBytes, {
      memAvailable: before,
      others,
      othersBefore,
    });
    if (this.#core.table.instances.get(inst.spec.key) === inst)
      this.#core.table.instances.delete(inst.spec.key);
    this.#core.table.transition(inst, inst.status, 'absent');
    this.#core.events.emit('memory-released', check);
    if (!check.ok) this.#core.log.warn('memory not verified released', { ...check });
  }

  /** Private memory of our other hosts, sampled now: while one host exits, a new one may still be growing. */
  async #privateBytes(instances: Instance[]): Promise<number> {
    await Promise.all(instances.map((i) => this.#sampleMemory(i)));
    return instances.reduce((sum, i) => sum + i.anonBytes, 0);
  }

  async #verifyReleased(
    instanceKey: string,
    pid: number,
    held: { rss: number; anon: number },
    peak: number,
    before: { memAvailable: number; others: Instance[]; othersBefore: number },
  ): Promise<ReleaseCheck> {
    const { timeoutMs, pollMs, tolerance } = this.#core.opts.release;
    const deadline = this.#core.deps.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const gone = !(await this.#core.deps.memory.processAlive(pid));
      const othersGrowth = (await this.#privateBytes(before.others)) - before.othersBefore;
      const after = await this.#core.deps.memory.memAvailableBytes();
      const ok = gone && after - before.memAvailable + othersGrowth >= held.anon - tolerance * peak;
      if (ok || this.#core.deps.clock.monotonicMs() >= deadline)
        return {
          instanceKey,
          pid,
          processGone: gone,
          rssAtStopBytes: held.rss,
          anonAtStopBytes: held.anon,
          peakRssBytes: peak,
          memAvailableBeforeBytes: before.memAvailable,
          memAvailableAfterBytes: after,
          otherHostsGrowthBytes: othersGrowth,
          ok,
        };
      await sleep(pollMs);
    }
  }
}

/** `p`, or a rejection when it takes longer than `ms` or the signal aborts (the caller then stops the host). */
function bounded<T>(p: Promise<T>, ms: number, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => reject(new Error(`did not finish within ${ms} ms`)), ms);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    });
  });
}
