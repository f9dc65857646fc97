import { errorMessage } from '../../lib/errors.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import {
  defaultPlanPolicy,
  type Placement,
  type ProbeResult,
  type SlotConstraints,
  type SlotName,
  type SlotSpec,
} from '../plan/types.js';
import { assertSlot, type DesiredStateDocument, DesiredStateStore } from './desired/desired-state.js';
import { FailureBook } from './desired/failures.js';
import { assertPinBackend } from './desired/pin-check.js';
import { ProbeStore } from './desired/probe-store.js';
import {
  defaultRuntimeOptions,
  type RunnerHealth,
  type RuntimeDeps,
  type RuntimeState,
  type SlotInfo,
  type SlotStats,
} from './desired/types.js';
import { EngineFailure } from './engine/engine-port.js';
import { Measurement, type ProbeFilter, type ProbeOptions } from './measuring/measurement.js';
import type { RuntimeEvents } from './reconciling/events.js';
import { Failover } from './reconciling/failover.js';
import { InstanceTable, type RuntimeCore } from './reconciling/instance-table.js';
import { Planning } from './reconciling/planning.js';
import { Reconciler } from './reconciling/reconciler.js';
import { ExclusiveRunner } from './reconciling/runner.js';
import { attachBackendHealth, type BackendHealth, backendOfKey } from './serving/backend-health.js';
import { Serving, type SlotMetrics } from './serving/serving.js';

export * from './desired/types.js';

/**
 * The runtime: owns the desired-state document, the engine hosts and which instance serves each slot.
 * Workloads call its `serving` (acquire, stream, speak, forward, generate); the fleet, the dashboard and OTA
 * change what runs through `configure`, `pin`, `setModelVersion`; everything else is the reconcile loop's business.
 *
 * A facade over its parts, each in its own file: the desired state (desired-state.ts), planning and replans
 * (planning.ts), the reconciler (reconciler.ts, steps.ts, runner.ts), serving (serving.ts), measurement
 * (measurement.ts, probe.ts) and failure/fallback bookkeeping (failover.ts, failures.ts).
 */
export class Runtime {
  readonly events = new TypedEventEmitter<RuntimeEvents>();
  readonly desired: DesiredStateStore;
  readonly probes: ProbeStore;
  readonly #deps: RuntimeDeps;
  readonly #core: RuntimeCore;
  readonly #runner: ExclusiveRunner;
  readonly #planning: Planning;
  readonly #failover: Failover;
  readonly #health: BackendHealth | undefined;
  /** The workloads' side: leases, generation, speech and forwards on whatever serves a slot (serving.ts). */
  readonly serving: Serving;
  readonly #measurement: Measurement;
  readonly #reconciler: Reconciler;
  #exclusive: Promise<unknown> = Promise.resolve();
  #stopped = false;
  #started = false;
  #watchdog: NodeJS.Timeout | undefined;
  readonly #stopping = new AbortController();

  constructor(deps: RuntimeDeps) {
    this.#deps = deps;
    const opts = { ...defaultRuntimeOptions, ...deps.options };
    const log = deps.log;
    this.desired = new DesiredStateStore(deps.db, deps.clock);
    this.probes = new ProbeStore(deps.db);
    this.#core = {
      deps,
      opts,
      log,
      events: this.events,
      failures: new FailureBook(deps.clock, opts.failureBackoff),
      table: new InstanceTable(deps.clock, this.events),
      trigger: () => this.#runner.trigger(),
      health: () => this.#runner.health(),
      stopped: () => this.#stopped,
    };
    this.#planning = new Planning(this.#core, this.desired, this.probes, deps.policy ?? defaultPlanPolicy);
    this.#failover = new Failover(this.#core);
    this.#health = attachBackendHealth(this, deps, this.#core.failures, () => this.#runner.trigger());
    this.#failover.onFallback = (fromKey, reason) => this.#health?.markDown(backendOfKey(fromKey), reason);
    this.serving = new Serving(
      this.#core,
      {
        placement: () => this.#planning.placement(),
        wake: (slot) => this.#planning.wake(slot, 'a request came'),
      },
      this.#failover,
    );
    this.#reconciler = new Reconciler(this.#core, this.#planning, this.#failover);
    this.#measurement = new Measurement(this.#core, {
      planning: this.#planning,
      probes: this.probes,
      exclusive: (fn) => this.exclusive(fn),
      replan: (reason) => this.replan(reason),
      stopping: this.#stopping.signal,
    });
    this.#runner = new ExclusiveRunner((signal) => this.exclusive(() => this.#reconciler.run(signal)), {
      clock: deps.clock,
      backoff: opts.runnerBackoff,
      stuckAfterMs: opts.stuckAfterMs,
      onRunStart: () => this.#armWatchdog(),
      onError: (err, n, retryInMs) => {
        log.warn('reconcile failed', { error: errorMessage(err), consecutiveFailures: n, retryInMs });
        this.events.emit('runner-error', { error: errorMessage(err), consecutiveFailures: n, retryInMs });
      },
    });
  }

  get engineVersion(): string {
    return this.#deps.hosts.engineVersion;
  }

  /** Why no engine host can run on this device (MNN missing), or undefined. */
  get engineUnavailableReason(): string | undefined {
    return this.#deps.hosts.unavailableReason;
  }

  /** The MNN config.json of the model serving the slot now (its chat template sits beside it), or undefined. */
  servedConfigPath(slot: SlotName): string | undefined {
    return this.#core.table.servingInstance(slot)?.spec.configPath;
  }

  /** What the current placement does with a slot, in terms a workload can explain to its user. */
  slotInfo(slot: SlotName): SlotInfo {
    return this.#planning.slotInfo(slot);
  }

  // ---------------------------------------------------------------- writers of the desired state

  /** The config source of the desired state (at start and on config reload). */
  async configure(slots: readonly SlotSpec[]): Promise<Placement> {
    this.desired.replaceConfig(slots);
    return this.replan('configuration changed');
  }

  /** An operator's placement override for a slot (fleet command or dashboard). */
  async pin(slot: SlotName, constraints: SlotConstraints, author: string): Promise<Placement> {
    assertPinBackend(assertSlot(slot), constraints, await this.#deps.sources.board());
    this.desired.setPin(assertSlot(slot), constraints, author);
    return this.replan(`${slot} pinned by ${author}`);
  }

  async unpin(slot: SlotName, author: string): Promise<Placement> {
    this.desired.clearPin(assertSlot(slot));
    return this.replan(`${slot} pin cleared by ${author}`);
  }

  /**
   * An OTA job activating a model version (or, after a failed gate, going back to the one before): every slot
   * using the model moves to it. The job id is the desired state's author (`ota:<job>`, `ota:<job>:rollback`)
   * and is named in the replan reason.
   */
  async setModelVersion(
    modelId: string,
    version: string,
    jobId: string,
    why: 'activate' | 'rollback' = 'activate',
  ): Promise<Placement> {
    const rollback = why === 'rollback';
    this.desired.setModelVersion(modelId, version, rollback ? `ota:${jobId}:rollback` : `ota:${jobId}`);
    return this.replan(
      rollback
        ? `OTA job ${jobId} rolls back to ${modelId}@${version}`
        : `OTA job ${jobId} activates ${modelId}@${version}`,
    );
  }

  async clearModelVersion(modelId: string, jobId: string): Promise<Placement> {
    this.desired.clearModelVersion(modelId);
    return this.replan(`OTA job ${jobId} released the version of ${modelId}`);
  }

  /** Restart the engine hosts serving these slots (an operator's `restart-workload`); see Failover.restart. */
  restart(slots: readonly SlotName[], reason: string): string[] {
    return this.#failover.restart(slots, reason);
  }

  /** The placement these config slots would get, changing nothing. */
  preview(slots: SlotSpec[]): Promise<Placement> {
    return this.#planning.preview(slots);
  }

  /** Plan again from the stored sources, the board, the catalog and the measurements; then reconcile. */
  replan(reason: string): Promise<Placement> {
    return this.#planning.replan(reason);
  }

  // ---------------------------------------------------------------- workloads

  /**
   * Unload the model serving a slot until its next request (Ollama's `keep_alive`), which loads it again and
   * waits for the load. False when no model serves the slot now. Not stored: a restart loads it again.
   */
  park(slot: SlotName, reason: string): Promise<boolean> {
    return this.#planning.park(assertSlot(slot), reason);
  }

  /** Whether the slot's model is unloaded by park() and waits for its next request. */
  isParked(slot: SlotName): boolean {
    return this.#planning.isParked(slot);
  }

  /** The context the configuration sized the slot's KV cache for, in tokens. */
  contextTokens(slot: SlotName): number | undefined {
    return this.#planning.contextTokens(slot);
  }

  /** Request, error and latency distributions per slot, for /metrics. */
  slotMetrics(): SlotMetrics[] {
    return this.serving.slotMetrics();
  }

  /** Per slot: what serves it and how the last requests went (telemetry's RuntimeStatsProvider shape). */
  slotStats(): SlotStats[] {
    return this.serving.slotStats();
  }

  // ---------------------------------------------------------------- measured selection

  /** Probe the catalog's candidates (or one model's) on this board, store the numbers and plan again. */
  probeModels(filter: ProbeFilter = {}, opts: ProbeOptions = {}): Promise<ProbeResult[]> {
    return this.#measurement.probeModels(filter, opts);
  }

  /** After a model install: probe it at low priority in the background; errors are logged, not thrown. */
  probeInBackground(filter: ProbeFilter): void {
    this.#measurement.probeInBackground(filter);
  }

  // ---------------------------------------------------------------- loop control

  start(): void {
    this.#started = true;
    this.#runner.trigger();
    this.#armWatchdog();
  }

  /**
   * Whether the loop's watchdog timer is armed. It ticks only while it has something to watch (a reconcile run
   * to time, instances whose memory to sample): an agent with nothing placed wakes up for nobody (bench/idle).
   */
  get watchdogArmed(): boolean {
    return this.#watchdog !== undefined;
  }

  /** Every run arms the watchdog (a run may hang, and it is what starts instances). */
  #armWatchdog(): void {
    if (!this.#started || this.#stopped || this.#watchdog !== undefined) return;
    const { tickMs, stuckAfterMs } = this.#core.opts;
    this.#watchdog = setInterval(() => this.#tick(), Math.max(5, Math.min(tickMs, stuckAfterMs / 4)));
    this.#watchdog.unref?.();
  }

  #tick(): void {
    this.#reconciler.sampleReady();
    this.#checkLoop();
    // Nothing running and nothing hosted: the next run re-arms it.
    if (!this.#runner.health().running && this.#core.table.instances.size === 0) {
      clearInterval(this.#watchdog);
      this.#watchdog = undefined;
    }
  }

  /** The loop's own health check: a run stuck past its limit is reported and cancelled, so the loop recovers. */
  #checkLoop(): void {
    const h = this.#runner.health();
    if (!h.running || h.runningForMs <= this.#core.opts.stuckAfterMs) return;
    this.#core.log.error('reconcile run stuck; cancelling it', { runningForMs: h.runningForMs });
    this.events.emit('runner-error', {
      error: h.reason,
      consecutiveFailures: h.consecutiveFailures,
      retryInMs: 0,
    });
    this.#runner.cancelCurrent(`reconcile run cancelled by the watchdog: ${h.reason}`);
  }

  /** Resolves once the reconcile loop has nothing running or queued. */
  async settled(): Promise<void> {
    await this.#runner.settled();
  }

  /** Run `fn` while no reconcile step runs (probes use it, so they never compete with a swap for memory). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#exclusive.then(fn, fn);
    this.#exclusive = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort(new Error('runtime stopping'));
    this.#failover.stop();
    this.#health?.stop();
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    await this.#runner.stop();
    await this.#measurement.settled();
    const { table } = this.#core;
    table.serving = {};
    table.wakeServingWaiters();
    await Promise.all(
      [...table.instances.values()].map(async (inst) => {
        table.expectedExit.add(inst);
        inst.cancelAll(new EngineFailure('cancelled', `request cancelled: the runtime is stopping`));
        await inst.host.stop().catch(() => undefined);
      }),
    );
    table.instances.clear();
  }

  health(): RunnerHealth {
    return this.#runner.health();
  }

  state(): RuntimeState {
    const { table } = this.#core;
    return {
      revision: this.desired.revision().revision,
      placement: this.#planning.placement(),
      serving: { ...table.serving },
      active: this.#failover.choices().map((c) => ({ ...c })),
      instances: table.states(),
      failures: this.#core.failures.all(),
      transitions: [...table.transitions],
      health: this.#runner.health(),
      backends: this.#health?.state() ?? [],
      loadTimes: table.loadTimes.list(),
    };
  }

  document(): DesiredStateDocument {
    return this.desired.document();
  }
}
