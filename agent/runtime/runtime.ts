import { type Clock, sleep } from '../common/clock.js';
import { errorMessage, MnnEdgeError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { TypedEventEmitter } from '../common/typed-events.js';
import { planPlacement } from '../plan/planner.js';
import {
  type BuiltinName,
  defaultPlanPolicy,
  type ModelKind,
  type Placement,
  type PlanBoard,
  type PlanCatalog,
  type PlanPolicy,
  type ProbeResult,
  type SlotConstraints,
  type SlotName,
  type SlotSpec,
} from '../plan/types.js';
import type { Db } from '../store/database.js';
import type { SlotRuntimeStats } from '../telemetry/runtime-stats.js';
import {
  attachBackendHealth,
  type BackendHealth,
  type BackendHealthOptions,
  type BackendHealthState,
  backendOfKey,
} from './backend-health.js';
import { assertSlot, type DesiredStateDocument, DesiredStateStore } from './desired-state.js';
import {
  describeExit,
  EngineFailure,
  type EngineHost,
  type EngineHostFactory,
  type GenerateEvent,
  type GenerateRequest,
  type GenerateStats,
  type HostExit,
  type SpeakRequest,
  type SpeechOut,
  type TensorIn,
  type TensorOut,
} from './engine-port.js';
import type { ReleaseCheck, RuntimeEvents, Transition } from './events.js';
import { defaultFailureBackoff, type FailureBackoff, FailureBook, type FailureRecord } from './failures.js';
import { Instance, type Lease } from './instance.js';
import { moduleProfileOf } from './module-models.js';
import { assertPinBackend } from './pin-check.js';
import { probeCandidate, probeCandidates } from './probe.js';
import { ProbeStore } from './probe-store.js';
import type { SystemMemory } from './proc-memory.js';
import { resilientStream } from './resilient-stream.js';
import { ExclusiveRunner, type RunnerHealth } from './runner.js';
import { describeStep, planSteps } from './steps.js';
import { type ActiveChoice, activeTarget, type KindOf, specOf } from './target.js';
import type { CurrentState, InstanceSpec, InstanceStatus, Step, StepPlan } from './types.js';

export interface RuntimeOptions {
  /** In-flight requests on a replaced instance get this long to finish, then they are cancelled. */
  drainTimeoutMs: number;
  /** After cancelling, how long to wait for the cancelled requests to unwind. */
  drainGraceMs: number;
  /** How long `acquire` waits for a slot that is being (re)loaded. */
  acquireTimeoutMs: number;
  /** MemAvailable kept free during a swap; below it the swap stops the old instance first. */
  memoryReserveBytes: number;
  /** The one short generation that proves a new instance works before it takes traffic. */
  warmUp: GenerateRequest;
  /** Release check after a host stops: how long to wait for MemAvailable to come back, and the tolerance as a
   *  share of the host's peak RSS. */
  release: { timeoutMs: number; pollMs: number; tolerance: number };
  runnerBackoff: { baseMs: number; maxMs: number };
  /** Load and warm-up each get this long; a hung driver then counts as a failed candidate. */
  startupTimeoutMs: number;
  /** A reconcile run longer than this is reported and cancelled by the loop's watchdog. */
  stuckAfterMs: number;
  /** How often the watchdog looks at the loop and refreshes the hosts' RSS for the dashboard. */
  tickMs: number;
  failureBackoff: FailureBackoff;
}

export const defaultRuntimeOptions: RuntimeOptions = {
  drainTimeoutMs: 10_000,
  drainGraceMs: 2_000,
  acquireTimeoutMs: 60_000,
  memoryReserveBytes: 256 * 1024 * 1024,
  warmUp: { prompt: 'Hello', maxNewTokens: 2 },
  release: { timeoutMs: 2_000, pollMs: 50, tolerance: 0.1 },
  runnerBackoff: { baseMs: 500, maxMs: 60_000 },
  startupTimeoutMs: 5 * 60_000,
  stuckAfterMs: 15 * 60_000,
  tickMs: 10_000,
  failureBackoff: defaultFailureBackoff,
};

/** What the planner needs besides the desired state, read fresh on every replan (models get installed). */
export interface PlanSources {
  board(): Promise<PlanBoard> | PlanBoard;
  catalog(): Promise<PlanCatalog> | PlanCatalog;
}

export interface RuntimeDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  hosts: EngineHostFactory;
  memory: SystemMemory;
  sources: PlanSources;
  policy?: PlanPolicy;
  options?: Partial<RuntimeOptions>;
  /** Told which model versions the placement uses (chosen and fallbacks), so the store's GC keeps them
   *  (models/: ModelStore.setInUse). */
  inUse?: (refs: { id: string; version: string }[]) => void;
  /** Probes a backend in a fresh engine host. With it, a GPU backend that failed live is held down until probes
   *  pass (with hysteresis) instead of being retried by loading models on it. */
  backendHealth?: Omit<BackendHealthOptions, 'clock' | 'log'>;
}

/** A request's hold on a slot: the engine host serving it, or the built-in that does. */
export type SlotLease =
  | (Lease & { kind: 'engine'; slot: SlotName })
  | { kind: 'builtin'; slot: SlotName; builtin: BuiltinName; release(): void };

export interface GenerateResult {
  text: string;
  stats: GenerateStats | undefined;
  instanceKey: string;
}

export interface InstanceState {
  key: string;
  modelId: string;
  version: string;
  status: InstanceStatus;
  pid: number;
  rssBytes: number;
  peakRssBytes: number;
  inflight: number;
  slots: SlotName[];
  startedAtMs: number;
}

export interface RuntimeState {
  revision: number;
  placement: Placement | undefined;
  serving: Partial<Record<SlotName, string>>;
  active: ActiveChoice[];
  instances: InstanceState[];
  failures: FailureRecord[];
  transitions: Transition[];
  health: RunnerHealth;
  /** GPU backends held down after a live failure until probes pass (empty when all are fine). */
  backends: BackendHealthState[];
}

interface SlotCounters {
  requests: number;
  errors: number;
  tokensPerSec?: number;
  ttftMs?: number;
}

/** One slot for telemetry and the dashboard: what serves it and how its requests went. */
/** The telemetry's view of a slot, with the slot typed: `model` is `id@version` or the built-in's name. */
export interface SlotStats extends SlotRuntimeStats {
  slot: SlotName;
}

/** What a workload needs to know about a slot before it uses it. */
export type SlotInfo =
  | { status: 'placed' | 'degraded'; modelId: string; version: string; kind: ModelKind | undefined }
  | { status: 'builtin'; builtin: BuiltinName }
  /** Configured, but nothing can run it now (reasons say why), or switched off. */
  | { status: 'unloaded' | 'disabled'; reasons: string[] }
  /** The slot is not in the configuration (or the runtime has not planned yet). */
  | { status: 'unconfigured' };

/** A startup step of a candidate failed and the failure was recorded: the next attempt can fall back. */
class CandidateFailed extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(message);
    this.key = key;
  }
}

const MAX_ATTEMPTS_PER_RUN = 6;
const TRANSITIONS_KEPT = 200;

/**
 * The runtime: owns the desired-state document, the engine hosts and which instance serves each slot.
 * Workloads call `acquire`/`stream`/`generate`; the fleet, the dashboard and OTA change what runs through
 * `configure`, `pin`, `setModelVersion`; everything else is the reconcile loop's business.
 */
export class Runtime {
  readonly events = new TypedEventEmitter<RuntimeEvents>();
  readonly desired: DesiredStateStore;
  readonly probes: ProbeStore;
  readonly #deps: RuntimeDeps;
  readonly #opts: RuntimeOptions;
  readonly #policy: PlanPolicy;
  readonly #log: Logger;
  readonly #failures: FailureBook;
  readonly #health: BackendHealth | undefined;
  readonly #runner: ExclusiveRunner;
  readonly #instances = new Map<string, Instance>();
  readonly #expectedExit = new WeakSet<Instance>();
  #serving: Partial<Record<SlotName, string>> = {};
  #choices: ActiveChoice[] = [];
  readonly #transitions: Transition[] = [];
  #servingWaiters: (() => void)[] = [];
  #retryTimer: NodeJS.Timeout | undefined;
  #runStartMs = 0;
  #exclusive: Promise<unknown> = Promise.resolve();
  #stopped = false;
  #background = new Set<Promise<unknown>>();
  /** The stored placement, kept in memory: acquire() reads it on every request. */
  #placement: Placement | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  readonly #stopping = new AbortController();
  readonly #counters = new Map<SlotName, SlotCounters>();
  /** Catalog kind per `id@version`, from the last plan: decides LLM or Module hosting. */
  #kinds = new Map<string, ModelKind>();
  readonly #kindOf: KindOf = (id, version) => this.#kinds.get(`${id}@${version}`);

  constructor(deps: RuntimeDeps) {
    this.#deps = deps;
    this.#opts = { ...defaultRuntimeOptions, ...deps.options };
    this.#policy = deps.policy ?? defaultPlanPolicy;
    this.#log = deps.log;
    this.desired = new DesiredStateStore(deps.db, deps.clock);
    this.probes = new ProbeStore(deps.db);
    this.#failures = new FailureBook(deps.clock, this.#opts.failureBackoff);
    this.#health = attachBackendHealth(this, deps, this.#failures, () => this.#runner.trigger());
    this.#placement = this.desired.placement();
    this.#runner = new ExclusiveRunner((signal) => this.exclusive(() => this.#reconcile(signal)), {
      clock: deps.clock,
      backoff: this.#opts.runnerBackoff,
      stuckAfterMs: this.#opts.stuckAfterMs,
      onError: (err, n, retryInMs) => {
        this.#log.warn('reconcile failed', { error: errorMessage(err), consecutiveFailures: n, retryInMs });
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

  /** What the current placement does with a slot, in terms a workload can explain to its user. */
  slotInfo(slot: SlotName): SlotInfo {
    const planned = this.#placement?.slots.find((s) => s.slot === slot);
    if (!planned) return { status: 'unconfigured' };
    if (planned.status === 'builtin' && planned.builtin)
      return { status: 'builtin', builtin: planned.builtin };
    if (planned.status === 'placed' || planned.status === 'degraded') {
      const chosen = this.#placement?.instances.find((i) => i.slots.includes(slot))?.chosen;
      if (chosen)
        return {
          status: planned.status,
          modelId: chosen.modelId,
          version: chosen.version,
          kind: this.#kindOf(chosen.modelId, chosen.version),
        };
    }
    return { status: planned.status === 'disabled' ? 'disabled' : 'unloaded', reasons: planned.reasons };
  }

  // ---------------------------------------------------------------- writers of the desired state

  /** The config layer (at start and on config reload). */
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

  /** An OTA job activating a model version: every slot using the model moves to it. */
  async setModelVersion(modelId: string, version: string, jobId: string): Promise<Placement> {
    this.desired.setModelVersion(modelId, version, `ota:${jobId}`);
    return this.replan(`OTA job ${jobId} activates ${modelId}@${version}`);
  }

  async clearModelVersion(modelId: string, jobId: string): Promise<Placement> {
    this.desired.clearModelVersion(modelId);
    return this.replan(`OTA job ${jobId} released the version of ${modelId}`);
  }

  /**
   * Restart the engine hosts serving these slots (an operator's `restart-workload`): their in-flight requests
   * are cancelled with the reason, new requests wait, and the reconciler starts fresh hosts with the same
   * choice — the crash-recovery path, without counting a failure against the backend.
   */
  restart(slots: readonly SlotName[], reason: string): string[] {
    const keys = new Set<string>();
    for (const slot of slots) {
      const key = this.#serving[slot];
      if (key !== undefined) keys.add(key);
    }
    for (const key of keys) {
      const inst = this.#instances.get(key);
      if (!inst) continue;
      for (const s of Object.keys(this.#serving) as SlotName[])
        if (this.#serving[s] === key) delete this.#serving[s];
      this.#setStatus(inst, 'failed', `restart requested: ${reason}`);
      inst.cancelAll(new EngineFailure('cancelled', `request cancelled: ${reason}`));
      this.#log.info('restarting instance', { instance: key, reason });
    }
    this.#runner.trigger();
    return [...keys];
  }

  /** Plan again from the stored layers, the board, the catalog and the measurements; then reconcile. */
  async replan(reason: string): Promise<Placement> {
    const board = await this.#deps.sources.board();
    const catalog = await this.#deps.sources.catalog();
    const slots = this.desired.configSlots();
    const placement = planPlacement({
      board,
      catalog,
      slots,
      constraints: this.#stickyVersions(slots, this.desired.constraints(), catalog),
      probes: this.probes.forBoard(board.boardId, this.engineVersion),
      engineVersion: this.engineVersion,
      policy: this.#policy,
    });
    const revision = this.desired.setPlacement(placement);
    this.#kinds = new Map(catalog.models.map((m) => [`${m.id}@${m.version}`, m.kind]));
    this.#placement = placement;
    if (this.#deps.inUse) {
      const refs = new Map<string, { id: string; version: string }>();
      for (const i of placement.instances)
        for (const c of [i.chosen, ...i.fallback])
          refs.set(`${c.modelId}@${c.version}`, { id: c.modelId, version: c.version });
      this.#deps.inUse([...refs.values()]);
    }
    this.#log.info('placement', { revision, reason });
    this.events.emit('placement', { revision, placement, reason });
    this.#wakeServingWaiters();
    this.#runner.trigger();
    return placement;
  }

  /**
   * A slot whose version nobody set keeps the version it runs now: installing a newer version never switches by
   * itself (an OTA job's health gate, or an operator, decides that). Only the first plan takes the newest.
   */
  #stickyVersions(
    slots: readonly SlotSpec[],
    constraints: Partial<Record<SlotName, SlotConstraints>>,
    catalog: PlanCatalog,
  ): Partial<Record<SlotName, SlotConstraints>> {
    const out = { ...constraints };
    for (const spec of slots) {
      if (
        !('model' in spec.use) ||
        spec.use.model.version !== undefined ||
        out[spec.slot]?.version !== undefined
      )
        continue;
      const id = spec.use.model.id;
      const prev = this.#placement?.instances.find((i) => i.slots.includes(spec.slot))?.chosen;
      if (!prev || prev.modelId !== id) continue;
      if (!catalog.models.some((m) => m.id === id && m.version === prev.version)) continue;
      out[spec.slot] = { ...out[spec.slot], version: prev.version };
    }
    return out;
  }

  // ---------------------------------------------------------------- workloads

  /** A lease on whatever serves the slot now; waits (bounded) while the slot is being loaded or swapped. */
  async acquire(slot: SlotName, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<SlotLease> {
    assertSlot(slot);
    const deadline = this.#deps.clock.monotonicMs() + (opts.timeoutMs ?? this.#opts.acquireTimeoutMs);
    for (;;) {
      opts.signal?.throwIfAborted();
      if (this.#stopped) throw new MnnEdgeError('ESTOPPED', `runtime stopped: ${slot} is not served`);
      const planned = this.#placement?.slots.find((s) => s.slot === slot);
      if (planned?.status === 'builtin' && planned.builtin)
        return { kind: 'builtin', slot, builtin: planned.builtin, release: () => {} };
      if (planned === undefined && this.#placement !== undefined)
        throw new MnnEdgeError('EUNSERVED', `slot ${slot} is not configured`);
      if (planned?.status === 'unloaded' || planned?.status === 'disabled')
        throw new MnnEdgeError(
          'EUNSERVED',
          `slot ${slot} is ${planned.status}: ${planned.reasons.join('; ')}`,
        );
      const key = this.#serving[slot];
      const inst = key === undefined ? undefined : this.#instances.get(key);
      if (inst?.status === 'ready') return { ...inst.lease(), kind: 'engine', slot };
      const left = deadline - this.#deps.clock.monotonicMs();
      if (left <= 0)
        throw new MnnEdgeError(
          'ETIMEDOUT',
          `slot ${slot} was not served within ${opts.timeoutMs ?? this.#opts.acquireTimeoutMs} ms` +
            (this.#runner.health().lastError
              ? ` (last reconcile error: ${this.#runner.health().lastError})`
              : ''),
        );
      await this.#waitServing(left, opts.signal);
    }
  }

  /** Generate on a slot, token by token. A request cut off by a host crash or a drain deadline throws an
   *  EngineFailure that says so; a backend fault also moves the slot down its fallback chain. */
  async *stream(
    slot: SlotName,
    request: GenerateRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerateEvent> {
    const self = this;
    yield* resilientStream({
      signal,
      async *attempt() {
        const lease = await self.#engineLease(slot, 'llm', signal);
        yield* self.#streamOn(slot, lease, request, signal);
      },
      onRetry: (err) => this.#rescued(slot, 'retried', err.message, 0),
      onCutShort: (err, chars) => this.#rescued(slot, 'cut-short', err.message, chars),
    });
  }

  #rescued(slot: SlotName, outcome: 'retried' | 'cut-short', reason: string, streamedChars: number): void {
    this.#log.warn(
      outcome === 'retried' ? 'request retried on the fallback' : 'request cut short: backend lost',
      {
        slot,
        reason,
        streamedChars,
      },
    );
    this.events.emit('request-rescued', { slot, outcome, reason, streamedChars });
  }

  /** Speech from the talker of the model serving the slot (voice.tts). */
  async *speak(slot: SlotName, request: SpeakRequest, signal?: AbortSignal): AsyncGenerator<SpeechOut> {
    const lease = await this.#engineLease(slot, 'llm', signal);
    const stats = this.#slotCounters(slot);
    stats.requests++;
    try {
      yield* lease.host.speak(request, signal ? AbortSignal.any([signal, lease.signal]) : lease.signal);
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  /** One forward of the Module model serving the slot (Silero VAD on voice.vad). */
  async forward(slot: SlotName, inputs: TensorIn[], signal?: AbortSignal): Promise<TensorOut[]> {
    const lease = await this.#engineLease(slot, 'module', signal);
    const stats = this.#slotCounters(slot);
    stats.requests++;
    try {
      return await lease.host.forward(
        inputs,
        signal ? AbortSignal.any([signal, lease.signal]) : lease.signal,
      );
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  async generate(slot: SlotName, request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
    const lease = await this.#engineLease(slot, 'llm', signal);
    let text = '';
    let stats: GenerateStats | undefined;
    for await (const ev of this.#streamOn(slot, lease, request, signal)) {
      if (ev.type === 'text') text += ev.text;
      else stats = ev.stats;
    }
    return { text, stats, instanceKey: lease.instanceKey };
  }

  async #engineLease(slot: SlotName, use: 'llm' | 'module', signal: AbortSignal | undefined): Promise<Lease> {
    const lease = await this.acquire(slot, signal ? { signal } : {});
    if (lease.kind === 'builtin') {
      lease.release();
      throw new MnnEdgeError(
        'EINVAL',
        `slot ${slot} is served by the built-in ${lease.builtin}, which runs in the workload, not in an engine host`,
      );
    }
    const spec = this.#instances.get(lease.instanceKey)?.spec;
    const isModule = moduleProfileOf(spec?.kind) !== undefined;
    if (isModule !== (use === 'module')) {
      lease.release();
      throw new MnnEdgeError(
        'EINVAL',
        isModule
          ? `slot ${slot} is served by ${spec?.modelId}, a ${spec?.kind} model: it takes tensors (forward), not prompts`
          : `slot ${slot} is served by ${spec?.modelId}, a language model: it takes prompts, not tensors`,
      );
    }
    return lease;
  }

  async *#streamOn(
    slot: SlotName,
    lease: Lease,
    request: GenerateRequest,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerateEvent> {
    const combined = signal ? AbortSignal.any([signal, lease.signal]) : lease.signal;
    const stats = this.#slotCounters(slot);
    stats.requests++;
    const t0 = this.#deps.clock.monotonicMs();
    let first = true;
    try {
      for await (const ev of lease.host.generate(request, combined)) {
        if (ev.type === 'text' && first) {
          first = false;
          stats.ttftMs = this.#deps.clock.monotonicMs() - t0;
        } else if (ev.type === 'done' && ev.stats.decodeMs > 0) {
          stats.tokensPerSec = ev.stats.decodeTokens / (ev.stats.decodeMs / 1000);
        }
        yield ev;
      }
    } catch (err) {
      throw this.#requestFailed(lease, stats, err);
    } finally {
      lease.release();
    }
  }

  /** Counts a failed request and returns the error to throw; a backend fault moves the slot down its chain. */
  #requestFailed(lease: Lease, stats: SlotCounters, err: unknown): unknown {
    stats.errors++;
    // The lease's own abort reason is the clearest account of what happened to the host.
    if (lease.signal.aborted && lease.signal.reason instanceof EngineFailure) return lease.signal.reason;
    if (err instanceof EngineFailure && err.kind === 'backend') this.#backendFault(lease.instanceKey, err);
    return err;
  }

  #slotCounters(slot: SlotName): SlotCounters {
    let c = this.#counters.get(slot);
    if (!c) {
      c = { requests: 0, errors: 0 };
      this.#counters.set(slot, c);
    }
    return c;
  }

  /** Per slot: what serves it and how the last requests went (telemetry's RuntimeStatsProvider shape). */
  slotStats(): SlotStats[] {
    const out: SlotStats[] = [];
    for (const planned of this.#placement?.slots ?? []) {
      const inst = this.#instances.get(this.#serving[planned.slot] ?? '');
      const c = this.#counters.get(planned.slot) ?? { requests: 0, errors: 0 };
      const s: SlotStats = { slot: planned.slot, requests: c.requests, errors: c.errors };
      if (inst) {
        s.model = `${inst.spec.modelId}@${inst.spec.version}`;
        s.variant = inst.spec.variantId;
        s.backend = inst.spec.config.backend_type;
        s.hostRssBytes = inst.rssBytes;
      } else if (planned.builtin) {
        s.model = planned.builtin;
      }
      if (c.tokensPerSec !== undefined) s.tokensPerSec = c.tokensPerSec;
      if (c.ttftMs !== undefined) s.ttftMs = c.ttftMs;
      out.push(s);
    }
    return out;
  }

  // ---------------------------------------------------------------- measured selection

  /**
   * Probe every candidate of the catalog (or of one model) on this board, store the numbers, and plan again
   * with them. Each probe runs while no reconcile step does; a candidate that does not fit in MemAvailable
   * right now is skipped (not recorded as failed).
   */
  async probeModels(
    filter: { modelId?: string; version?: string } = {},
    opts: {
      signal?: AbortSignal;
      lowPriority?: boolean;
      onResult?: (r: ProbeResult) => void;
      onSkip?: (key: string, reason: string) => void;
    } = {},
  ): Promise<ProbeResult[]> {
    const board = await this.#deps.sources.board();
    const catalog = await this.#deps.sources.catalog();
    const candidates = probeCandidates(board, catalog, this.#policy, this.engineVersion, filter);
    const signal = opts.signal
      ? AbortSignal.any([opts.signal, this.#stopping.signal])
      : this.#stopping.signal;
    const results: ProbeResult[] = [];
    for (const c of candidates) {
      signal.throwIfAborted();
      const r = await this.exclusive(async () => {
        const free = (await this.#deps.memory.memAvailableBytes()) - this.#opts.memoryReserveBytes;
        if (c.memoryBytes > free) return `needs ${c.memoryBytes} bytes, ${free} available above the reserve`;
        return probeCandidate(specOf(c, this.#kindOf), {
          hosts: this.#deps.hosts,
          boardId: board.boardId,
          clock: this.#deps.clock,
          signal,
          lowPriority: opts.lowPriority ?? false,
        });
      });
      if (typeof r === 'string') {
        this.#log.info('probe skipped', { candidate: c.key, reason: r });
        opts.onSkip?.(c.key, r);
        continue;
      }
      this.probes.put(r);
      results.push(r);
      opts.onResult?.(r);
    }
    if (results.length > 0) await this.replan(`${results.length} probe result(s) stored`);
    return results;
  }

  /** After a model install: probe it at low priority in the background; errors are logged, not thrown. */
  probeInBackground(filter: { modelId?: string; version?: string }): void {
    const run = this.probeModels(filter, { lowPriority: true })
      .catch((err: unknown) => {
        if (!this.#stopped)
          this.#log.warn('background probe failed', { ...filter, error: errorMessage(err) });
      })
      .finally(() => this.#background.delete(run));
    this.#background.add(run);
  }

  // ---------------------------------------------------------------- loop control

  start(): void {
    this.#runner.trigger();
    this.#watchdog ??= setInterval(
      () => this.#tick(),
      Math.max(5, Math.min(this.#opts.tickMs, this.#opts.stuckAfterMs / 4)),
    );
    this.#watchdog.unref?.();
  }

  #tick(): void {
    for (const inst of this.#instances.values()) if (inst.status === 'ready') void this.#sampleMemory(inst);
    this.#checkLoop();
  }

  /** The loop's own health check: a run stuck past its limit is reported and cancelled, so the loop recovers. */
  #checkLoop(): void {
    const h = this.#runner.health();
    if (!h.running || h.runningForMs <= this.#opts.stuckAfterMs) return;
    this.#log.error('reconcile run stuck; cancelling it', { runningForMs: h.runningForMs });
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
    this.#health?.stop();
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    if (this.#watchdog) clearInterval(this.#watchdog);
    await this.#runner.stop();
    await Promise.all(this.#background);
    this.#serving = {};
    this.#wakeServingWaiters();
    await Promise.all(
      [...this.#instances.values()].map(async (inst) => {
        this.#expectedExit.add(inst);
        inst.cancelAll(new EngineFailure('cancelled', `request cancelled: the runtime is stopping`));
        await inst.host.stop().catch(() => undefined);
      }),
    );
    this.#instances.clear();
  }

  health(): RunnerHealth {
    return this.#runner.health();
  }

  state(): RuntimeState {
    return {
      revision: this.desired.revision().revision,
      placement: this.#placement,
      serving: { ...this.#serving },
      active: this.#choices.map((c) => ({ ...c })),
      instances: [...this.#instances.values()].map((i) => ({
        key: i.spec.key,
        modelId: i.spec.modelId,
        version: i.spec.version,
        status: i.status,
        pid: i.host.pid,
        rssBytes: i.rssBytes,
        peakRssBytes: i.peakRssBytes,
        inflight: i.inflight,
        slots: (Object.keys(this.#serving) as SlotName[]).filter((s) => this.#serving[s] === i.spec.key),
        startedAtMs: i.startedAtMs,
      })),
      failures: this.#failures.all(),
      backends: this.#health?.state() ?? [],
      transitions: [...this.#transitions],
      health: this.#runner.health(),
    };
  }

  document(): DesiredStateDocument {
    return this.desired.document();
  }

  // ---------------------------------------------------------------- reconcile

  async #reconcile(signal: AbortSignal): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS_PER_RUN; attempt++) {
      signal.throwIfAborted();
      const placement = this.#placement;
      if (!placement) return;
      const { target, choices } = activeTarget(placement, this.#failures, this.#kindOf);
      this.#announceChoices(choices);
      const current = this.#current();
      const availableBytes = await this.#deps.memory.memAvailableBytes();
      const plan = planSteps(current, target, {
        availableBytes,
        reserveBytes: this.#opts.memoryReserveBytes,
      });
      if (plan.steps.length === 0) {
        this.#scheduleRetryOfPreferred();
        return;
      }
      this.#runStartMs = this.#deps.clock.monotonicMs();
      this.events.emit('plan', {
        steps: plan.steps.map(describeStep),
        notes: plan.notes,
        strategies: plan.strategies,
      });
      for (const note of plan.notes) this.#log.info('swap strategy', { note });
      try {
        for (const step of plan.steps) await this.#execute(step, plan, signal);
      } catch (err) {
        if (!(err instanceof CandidateFailed)) throw err;
        // Try again at once if the failure changed what should run (a fallback exists); else let the
        // runner back off before the floor candidate is tried again.
        const again = activeTarget(placement, this.#failures, this.#kindOf).target;
        if (again.instances.some((i) => i.key === err.key)) throw err;
      }
    }
    throw new Error(`reconcile did not converge in ${MAX_ATTEMPTS_PER_RUN} attempts`);
  }

  #announceChoices(choices: ActiveChoice[]): void {
    const before = new Map(this.#choices.map((c) => [c.plannedKey, c]));
    for (const c of choices) {
      const prev = before.get(c.plannedKey);
      if (c.fallback && prev?.active.key !== c.active.key) {
        this.#health?.markDown(backendOfKey(c.fallback.fromKey), c.fallback.reason);
        const retryInMs = Number.isFinite(c.fallback.retryAtMs)
          ? Math.max(0, c.fallback.retryAtMs - this.#deps.clock.monotonicMs())
          : -1;
        this.#log.warn('fallback', {
          slots: c.slots,
          from: c.fallback.fromKey,
          to: c.active.key,
          reason: c.fallback.reason,
        });
        this.events.emit('fallback', {
          slots: c.slots,
          fromKey: c.fallback.fromKey,
          toKey: c.active.key,
          reason: c.fallback.reason,
          retryInMs,
        });
      } else if (!c.fallback && prev?.fallback) {
        this.#log.info('back on the preferred placement', { slots: c.slots, key: c.active.key });
        this.events.emit('recovered', { slots: c.slots, key: c.active.key });
      }
    }
    this.#choices = choices;
  }

  #scheduleRetryOfPreferred(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const at = this.#failures.nextRetryAtMs();
    if (at === undefined || this.#stopped) return;
    const inMs = Math.max(0, at - this.#deps.clock.monotonicMs()) + 5;
    this.#retryTimer = setTimeout(() => this.#runner.trigger(), inMs);
  }

  #current(): CurrentState {
    return {
      instances: [...this.#instances.values()].map((i) => ({
        spec: i.spec,
        status: i.status,
        pid: i.host.pid,
        rssBytes: i.rssBytes,
      })),
      serving: { ...this.#serving },
    };
  }

  async #execute(step: Step, plan: StepPlan, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    switch (step.kind) {
      case 'startHost':
        return this.#startHost(step.instance, signal);
      case 'load':
        return this.#startupStep(step.instance, 'loading', 'load failed', signal, (inst) =>
          inst.host.load(inst.spec, signal),
        );
      case 'warmUp':
        return this.#startupStep(step.instance, 'warming', 'warm-up failed', signal, async (inst) => {
          const profile = moduleProfileOf(inst.spec.kind);
          if (profile) await inst.host.forward(profile.warmUp(), signal);
          else
            for await (const _ of inst.host.generate(this.#opts.warmUp, signal)) {
              // Only completion matters: the instance answered.
            }
          await this.#sampleMemory(inst);
          this.#setStatus(inst, 'ready');
        });
      case 'switch':
        return this.#switch(step.slots, step.to, plan);
      case 'drain': {
        const inst = this.#instances.get(step.instance);
        if (!inst) return;
        this.#setStatus(inst, 'draining');
        const r = await inst.drain(this.#opts.drainTimeoutMs, this.#opts.drainGraceMs, () =>
          this.#deps.clock.monotonicMs(),
        );
        this.events.emit('drain', { instanceKey: inst.spec.key, ...r });
        return;
      }
      case 'unload': {
        const inst = this.#instances.get(step.instance);
        if (!inst || inst.status === 'failed') return;
        await inst.host.unload().catch((err: unknown) => {
          // The host is stopped next anyway; an unload error only matters for the log.
          this.#log.warn('unload failed', { instance: inst.spec.key, error: errorMessage(err) });
        });
        return;
      }
      case 'stopHost': {
        const inst = this.#instances.get(step.instance);
        if (inst) await this.#stopHost(inst);
        return;
      }
    }
  }

  async #startHost(spec: InstanceSpec, signal: AbortSignal): Promise<void> {
    let host: EngineHost;
    try {
      host = await this.#deps.hosts.start({ label: spec.key, cpus: spec.config.cpus }, signal);
    } catch (err) {
      this.#candidateFailed(spec.key, `engine host did not start: ${errorMessage(err)}`, 'startHost');
    }
    const inst = new Instance(spec, host, this.#deps.clock.nowMs());
    this.#instances.set(spec.key, inst);
    this.#transition(inst, 'absent', 'starting');
    void host.exited.then((exit) => this.#onExit(inst, exit));
  }

  async #startupStep(
    key: string,
    status: InstanceStatus,
    what: string,
    signal: AbortSignal,
    fn: (inst: Instance) => Promise<void>,
  ): Promise<void> {
    const inst = this.#instances.get(key);
    if (!inst) throw new CandidateFailed(key, `${key}: ${what}: its engine host is gone`);
    this.#setStatus(inst, status);
    try {
      await bounded(fn(inst), this.#opts.startupTimeoutMs, signal);
    } catch (err) {
      const exit = await Promise.race([inst.host.exited, sleep(0).then(() => undefined)]);
      const reason = exit
        ? `${what}: engine host pid ${inst.host.pid} exited (${describeExit(exit)}): ${errorMessage(err)}`
        : `${what}: ${errorMessage(err)}`;
      this.#setStatus(inst, 'failed', reason);
      this.#expectedExit.add(inst);
      await this.#stopHost(inst);
      // Cancelled from outside (stop, watchdog): not the candidate's fault, nothing to record.
      if (signal.aborted) throw signal.reason;
      this.#candidateFailed(key, reason, what);
    }
  }

  #candidateFailed(key: string, reason: string, step: string): never {
    const rec = this.#failures.record(key, reason);
    this.#log.warn('candidate failed', { instance: key, reason, failures: rec.count });
    this.events.emit('step-failed', { step, instanceKey: key, error: reason });
    throw new CandidateFailed(key, `${key}: ${reason}`);
  }

  #switch(slots: SlotName[], to: string | undefined, plan: StepPlan): void {
    const from = [...new Set(slots.map((s) => this.#serving[s]).filter((k): k is string => k !== undefined))];
    for (const s of slots) {
      if (to === undefined) delete this.#serving[s];
      else this.#serving[s] = to;
    }
    this.events.emit('switch', {
      slots,
      from,
      to,
      strategy: to === undefined ? undefined : plan.strategies[to],
      sinceRunStartMs: this.#deps.clock.monotonicMs() - this.#runStartMs,
    });
    this.#wakeServingWaiters();
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
    this.#expectedExit.add(inst);
    if (inst.status !== 'failed') this.#setStatus(inst, 'stopping');
    const others = [...this.#instances.values()].filter((i) => i !== inst && i.status !== 'failed');
    const othersBefore = await this.#privateBytes(others);
    const before = await this.#deps.memory.memAvailableBytes();
    await inst.host.stop();
    const check = await this.#verifyReleased(inst.spec.key, pid, held, inst.peakRssBytes, {
      memAvailable: before,
      others,
      othersBefore,
    });
    if (this.#instances.get(inst.spec.key) === inst) this.#instances.delete(inst.spec.key);
    this.#transition(inst, inst.status, 'absent');
    this.events.emit('memory-released', check);
    if (!check.ok) this.#log.warn('memory not verified released', { ...check });
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
    const { timeoutMs, pollMs, tolerance } = this.#opts.release;
    const deadline = this.#deps.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const gone = !(await this.#deps.memory.processAlive(pid));
      const othersGrowth = (await this.#privateBytes(before.others)) - before.othersBefore;
      const after = await this.#deps.memory.memAvailableBytes();
      const ok = gone && after - before.memAvailable + othersGrowth >= held.anon - tolerance * peak;
      if (ok || this.#deps.clock.monotonicMs() >= deadline)
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

  #onExit(inst: Instance, exit: HostExit): void {
    const expected = this.#expectedExit.has(inst);
    this.events.emit('host-exit', { instanceKey: inst.spec.key, pid: inst.host.pid, exit, expected });
    if (expected || this.#stopped) return;
    const starting = inst.status === 'starting' || inst.status === 'loading' || inst.status === 'warming';
    const reason = `engine host pid ${inst.host.pid} for ${inst.spec.key} exited unexpectedly (${describeExit(exit)})`;
    // During startup the step in progress sees the failure and records it; here only a serving host's death.
    if (starting) return;
    this.#markFailed(inst, new EngineFailure('crash', `request failed: ${reason}`), reason);
  }

  #backendFault(key: string, err: EngineFailure): void {
    const inst = this.#instances.get(key);
    if (!inst || inst.status === 'failed') return;
    this.#markFailed(inst, err, `backend fault on ${key}: ${err.message}`);
  }

  /** The instance can no longer serve: unserve its slots at once (new requests wait for the fallback instead of
   *  failing), cut its in-flight requests with a clear error, record the failure and reconcile. */
  #markFailed(inst: Instance, requestError: EngineFailure, reason: string): void {
    const key = inst.spec.key;
    for (const s of Object.keys(this.#serving) as SlotName[])
      if (this.#serving[s] === key) delete this.#serving[s];
    this.#setStatus(inst, 'failed', reason);
    inst.cancelAll(requestError);
    const rec = this.#failures.record(key, reason);
    this.#log.error('instance failed', { instance: key, reason, failures: rec.count });
    this.#runner.trigger();
  }

  #setStatus(inst: Instance, to: InstanceStatus, reason?: string): void {
    const from = inst.status;
    if (from === to) return;
    inst.status = to;
    this.#transition(inst, from, to, reason);
  }

  #transition(inst: Instance, from: Transition['from'], to: Transition['to'], reason?: string): void {
    const t: Transition = {
      atMs: this.#deps.clock.nowMs(),
      instanceKey: inst.spec.key,
      pid: inst.host.pid,
      from,
      to,
    };
    if (reason !== undefined) t.reason = reason;
    this.#transitions.push(t);
    if (this.#transitions.length > TRANSITIONS_KEPT) this.#transitions.shift();
    this.events.emit('transition', t);
  }

  #waitServing(ms: number, signal?: AbortSignal): Promise<void> {
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

  #wakeServingWaiters(): void {
    for (const w of this.#servingWaiters.splice(0)) w();
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
