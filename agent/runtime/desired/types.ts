import type { Clock } from '../../../lib/clock.js';
import type { Logger } from '../../../lib/log.js';
import type { Db } from '../../../lib/sqlite/database.js';
import type {
  BuiltinName,
  Candidate,
  ModelKind,
  Placement,
  PlanBoard,
  PlanCatalog,
  PlanPolicy,
  SlotName,
} from '../../plan/types.js';
import type { SlotRuntimeStats } from '../../telemetry/runtime-stats.js';
import type {
  EngineHost,
  EngineHostFactory,
  GenerateRequest,
  GenerateStats,
  InstanceLoad,
  InstanceSpec,
} from '../engine/engine-port.js';
import type { LoadSplit } from '../engine/load-split.js';
import type { SystemMemory } from '../engine/proc-memory.js';
import { defaultFailureBackoff, type FailureBackoff, type FailureRecord } from './failures.js';

// The runtime's types, in one file: the state model (what should run, what runs, the steps between), the
// records its rooms keep (transitions, leases, load times, the runner's health, the active choices) and the
// facade's options, dependencies and answers. Every room and the facade (runtime.ts) read them from here, so
// none of them imports another room for a shape, or the facade. What an engine host loads (InstanceSpec) is
// the engine port's (engine/engine-port.ts).

/** What should run: the instances, and which instance serves each slot (absent = the slot is not served). */
export interface TargetState {
  instances: InstanceSpec[];
  serving: Partial<Record<SlotName, string>>;
}

export type InstanceStatus =
  | 'starting'
  | 'loading'
  | 'warming'
  | 'ready'
  | 'draining'
  | 'stopping'
  | 'failed';

export interface CurrentInstance {
  spec: InstanceSpec;
  status: InstanceStatus;
  pid?: number;
  rssBytes?: number;
}

export interface CurrentState {
  instances: CurrentInstance[];
  serving: Partial<Record<SlotName, string>>;
}

export interface MemoryView {
  /** MemAvailable now. */
  availableBytes: number;
  /** Kept free even during a swap (the agent, the OS, workload buffers). */
  reserveBytes: number;
}

/** One thing the runner does. Steps are data, so the step planner is tested by the steps it returns. */
export type Step =
  | { kind: 'startHost'; instance: InstanceSpec }
  | { kind: 'load'; instance: string }
  | { kind: 'warmUp'; instance: string }
  /** New requests for these slots go to `to` (undefined: the slots wait, unserved) — one atomic flip. */
  | { kind: 'switch'; slots: SlotName[]; to: string | undefined }
  /** Wait for in-flight requests on the instance to finish; cancel them at the drain deadline. */
  | { kind: 'drain'; instance: string }
  | { kind: 'unload'; instance: string }
  /** Stop the host process and verify that it is gone and its memory came back. */
  | { kind: 'stopHost'; instance: string };

export type SwapStrategy = 'blue-green' | 'stop-then-load';

export interface StepPlan {
  steps: Step[];
  /** Why the steps look the way they do, e.g. why a swap stops the old instance first. */
  notes: string[];
  strategies: Record<string, SwapStrategy>;
}

export interface Transition {
  atMs: number;
  instanceKey: string;
  pid: number | undefined;
  from: InstanceStatus | 'absent';
  to: InstanceStatus | 'absent';
  reason?: string;
}

/** A request's hold on a serving instance: while any lease is open the instance counts as busy, so a drain
 *  knows what it waits for. Release exactly once (idempotent). */
export interface Lease {
  readonly instanceKey: string;
  readonly host: EngineHost;
  /** Aborted when the drain deadline passes or the host dies: stop using the host. */
  readonly signal: AbortSignal;
  release(): void;
}

export interface LoadTimeRecord {
  /** `model@version/variant`. */
  model: string;
  backend: string;
  /** Latest load without a kernel cache (GPU backends). */
  coldMs?: number;
  /** Latest load with the kernel cache present (GPU backends). */
  warmMs?: number;
  /** Latest load on a backend that has no kernel cache. */
  noCacheMs?: number;
  loads: number;
}

export interface RunnerHealth {
  healthy: boolean;
  running: boolean;
  runningForMs: number;
  runs: number;
  consecutiveFailures: number;
  lastError: string | undefined;
  lastOkAtMs: number | undefined;
  /** When the next run is due after a failure (monotonic ms), if one is scheduled. */
  retryAtMs: number | undefined;
  reason: string;
}

export interface ActiveChoice {
  /** The planner's instance key (its first choice). */
  plannedKey: string;
  active: Candidate;
  slots: SlotName[];
  /** Set when the first choice is blocked by a recent failure and a fallback runs instead. */
  fallback?: { fromKey: string; reason: string; retryAtMs: number };
}

// The backend health ledger's options and state (serving/backend-health.ts keeps the ledger).
/** Asks a fresh engine host whether a backend initialises and runs a graph now. */
export type BackendProbeFn = (backend: string) => Promise<{ ok: boolean; detail: string }>;

export interface BackendHealthOptions {
  probe: BackendProbeFn;
  clock: Clock;
  log: Logger;
  /** Time between probes of a backend that is down. */
  probeIntervalMs?: number;
  /** Successful probes in a row before the backend counts as back (hysteresis). */
  successesNeeded?: number;
  /** Shortest time on the fallback before returning, however fast the probes pass (no flapping). */
  minDownMs?: number;
}

export interface BackendHealthState {
  backend: string;
  status: 'down' | 'recovering';
  reason: string;
  downSinceMs: number;
  successes: number;
  lastProbe?: { ok: boolean; detail: string; atMs: number };
}

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
  /** Once loaded: how long it took and whether a GPU kernel cache was used. */
  load?: InstanceLoad;
  /** Where its start went so far (host start, read, MNN's load, warm-up). */
  loadSplit: LoadSplit;
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
  /** The latest cold and warm load per model variant and backend since start. */
  loadTimes: LoadTimeRecord[];
}

/** One slot for telemetry and the dashboard: what serves it and how its requests went. */
/** The telemetry's view of a slot, with the slot typed: `model` is `id@version` or the built-in's name. */
export interface SlotStats extends SlotRuntimeStats {
  slot: SlotName;
  /** Where the serving instance's start went (host start, read, MNN's load, warm-up). */
  loadSplit?: LoadSplit;
}

/** What a workload needs to know about a slot before it uses it. */
export type SlotInfo =
  | { status: 'placed' | 'degraded'; modelId: string; version: string; kind: ModelKind | undefined }
  | { status: 'builtin'; builtin: BuiltinName }
  /** Configured, but nothing can run it now (reasons say why), or switched off. */
  | { status: 'unloaded' | 'disabled'; reasons: string[] }
  /** The slot is not in the configuration (or the runtime has not planned yet). */
  | { status: 'unconfigured' };
