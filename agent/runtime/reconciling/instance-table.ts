import type { Clock } from '../../../lib/clock.js';
import type { Logger } from '../../../lib/log.js';
import type { TypedEventEmitter } from '../../../lib/typed-events.js';
import type { SlotName } from '../../plan/types.js';
import type { FailureBook } from '../desired/failures.js';
import type {
  CurrentState,
  InstanceState,
  InstanceStatus,
  RunnerHealth,
  RuntimeDeps,
  RuntimeOptions,
  Transition,
} from '../desired/types.js';
import type { RuntimeEvents } from './events.js';
import type { Instance } from './instance.js';
import { LoadTimes } from './load-times.js';

const TRANSITIONS_KEPT = 200;

/**
 * The engine hosts that exist and which one serves each slot: the state the reconciler changes and serving
 * reads. Requests waiting for a slot to be served park here and wake on every change.
 */
export class InstanceTable {
  readonly instances = new Map<string, Instance>();
  /** Hosts whose exit is ours (stopped, failed at startup): their exit is not a crash. */
  readonly expectedExit = new WeakSet<Instance>();
  serving: Partial<Record<SlotName, string>> = {};
  readonly transitions: Transition[] = [];
  readonly loadTimes = new LoadTimes();
  #servingWaiters: (() => void)[] = [];
  readonly #clock: Clock;
  readonly #events: TypedEventEmitter<RuntimeEvents>;

  constructor(clock: Clock, events: TypedEventEmitter<RuntimeEvents>) {
    this.#clock = clock;
    this.#events = events;
  }

  /** The instance serving the slot now, if any. */
  servingInstance(slot: SlotName): Instance | undefined {
    const key = this.serving[slot];
    return key === undefined ? undefined : this.instances.get(key);
  }

  /** Take every slot away from the instance. */
  unserve(key: string): void {
    for (const s of Object.keys(this.serving) as SlotName[])
      if (this.serving[s] === key) delete this.serving[s];
  }

  slotsOf(key: string): SlotName[] {
    return (Object.keys(this.serving) as SlotName[]).filter((s) => this.serving[s] === key);
  }

  setStatus(inst: Instance, to: InstanceStatus, reason?: string): void {
    const from = inst.status;
    if (from === to) return;
    inst.status = to;
    this.transition(inst, from, to, reason);
  }

  transition(inst: Instance, from: Transition['from'], to: Transition['to'], reason?: string): void {
    const t: Transition = {
      atMs: this.#clock.nowMs(),
      instanceKey: inst.spec.key,
      pid: inst.host.pid,
      from,
      to,
    };
    if (reason !== undefined) t.reason = reason;
    this.transitions.push(t);
    if (this.transitions.length > TRANSITIONS_KEPT) this.transitions.shift();
    this.#events.emit('transition', t);
  }

  waitServing(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.#servingWaiters = this.#servingWaiters.filter((w) => w !== done);
        reject(signal?.reason);
      };
      const timer = setTimeout(done, ms);
      this.#servingWaiters.push(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  wakeServingWaiters(): void {
    for (const w of this.#servingWaiters.splice(0)) w();
  }

  /** What runs now, as the step planner reads it. */
  current(): CurrentState {
    return {
      instances: [...this.instances.values()].map((i) => ({
        spec: i.spec,
        status: i.status,
        pid: i.host.pid,
        rssBytes: i.rssBytes,
      })),
      serving: { ...this.serving },
    };
  }

  states(): InstanceState[] {
    return [...this.instances.values()].map((i) => ({
      key: i.spec.key,
      modelId: i.spec.modelId,
      version: i.spec.version,
      status: i.status,
      pid: i.host.pid,
      rssBytes: i.rssBytes,
      peakRssBytes: i.peakRssBytes,
      inflight: i.inflight,
      slots: this.slotsOf(i.spec.key),
      startedAtMs: i.startedAtMs,
      ...(i.load ? { load: { ...i.load } } : {}),
      loadSplit: { ...i.loadSplit },
    }));
  }
}

/** What every part of the runtime shares: its dependencies, options, events, the failure book and the table. */
export interface RuntimeCore {
  readonly deps: RuntimeDeps;
  readonly opts: RuntimeOptions;
  readonly log: Logger;
  readonly events: TypedEventEmitter<RuntimeEvents>;
  readonly failures: FailureBook;
  readonly table: InstanceTable;
  /** Ask the reconcile loop for a run. */
  trigger(): void;
  health(): RunnerHealth;
  stopped(): boolean;
}
