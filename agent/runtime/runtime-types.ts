import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import type {
  BuiltinName,
  ModelKind,
  Placement,
  PlanBoard,
  PlanCatalog,
  PlanPolicy,
  SlotName,
} from '../plan/types.js';
import type { Db } from '../store/sqlite/database.js';
import type { SlotRuntimeStats } from '../telemetry/runtime-stats.js';
import type { BackendHealthOptions, BackendHealthState } from './backend-health.js';
import type { EngineHostFactory, GenerateRequest, GenerateStats } from './engine-port.js';
import type { Transition } from './events.js';
import { defaultFailureBackoff, type FailureBackoff, type FailureRecord } from './failures.js';
import type { Lease } from './instance.js';
import type { InstanceLoad, LoadTimeRecord } from './load-times.js';
import type { SystemMemory } from './proc-memory.js';
import type { RunnerHealth } from './runner.js';
import type { ActiveChoice } from './target.js';
import type { InstanceStatus } from './types.js';

// The runtime's options, dependencies and the shapes it answers with; shared by the facade (runtime.ts) and
// the parts it is made of, so none of them imports the facade.

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
}

/** What a workload needs to know about a slot before it uses it. */
export type SlotInfo =
  | { status: 'placed' | 'degraded'; modelId: string; version: string; kind: ModelKind | undefined }
  | { status: 'builtin'; builtin: BuiltinName }
  /** Configured, but nothing can run it now (reasons say why), or switched off. */
  | { status: 'unloaded' | 'disabled'; reasons: string[] }
  /** The slot is not in the configuration (or the runtime has not planned yet). */
  | { status: 'unconfigured' };
