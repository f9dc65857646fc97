import type { Capabilities } from '../../lib/capabilities.js';
import type { HubPullJobs } from '../../models/hub/pull-jobs.js';
import type { HubName, VariantPrecision } from '../../models/manifest/types.js';
import type { HubListing, HubRecommendations } from '../installed-models/hub-catalog.js';
import type { PlacementPort } from '../runtime/placement-port.js';

export type { PlacementPort, PlacementView, RuntimeInstanceView } from '../runtime/placement-port.js';

// What the dashboard API reads and drives, as small ports of its own. The composition root adapts the real
// modules (detect, runtime, models, telemetry, ota, fleet, workloads) to these; a module that is absent, or
// not running, is simply left out, and the API answers with a clear degraded state instead of failing.

/** Whether the MNN engine can run models here, and if not, why (in words a person can act on). */
export type EngineStatus =
  | { available: true; version: string; backends: readonly string[] }
  /** `fix`: what to do about it, as the CLI and the log say it. */
  | { available: false; reason: string; fix?: string };

/** The fleet connection as the dashboard shows it. */
export type BrokerStatus =
  | { state: 'disabled'; reason: string }
  | { state: 'connected'; url: string; sinceMs: number }
  | { state: 'unreachable'; url: string; error: string; retryInS?: number };

export interface HealthStatus {
  healthy: boolean;
  /** One line per unhealthy part ("runtime: reconcile failed 3 times: …"); empty when healthy. */
  problems: string[];
}

export interface InstalledModelView {
  id: string;
  version: string;
  kind: string;
  sizeBytes: number;
  variants: Array<{ id: string; quant: VariantPrecision; backends: readonly string[] }>;
  installedAt?: string;
  /** Where a hub pull came from; such a package is unsigned (trusted on first use). */
  pulledFrom?: { hub: HubName; repo: string; commit: string; trust: 'unsigned-tofu' };
}

export interface InstallProgressView {
  ref: string;
  step: string;
  doneBytes: number;
  totalBytes: number;
  startedAt: string;
  error?: string;
}

export interface ModelsPort {
  installed(): InstalledModelView[] | Promise<InstalledModelView[]>;
  /** Imports in progress (and the last ones that failed), newest first. */
  installs(): InstallProgressView[];
}

/** A model hub the dashboard can search and pull from. */
export interface HubSourceView {
  source: 'hf' | 'ms';
  hub: HubName;
  endpoint: string;
  /** The organisation searched when none is given (taobao-mnn, MNN). */
  owner: string;
  /** The environment variable a token for gated repositories comes from, and whether one is set. */
  tokenVariable: string;
  hasToken: boolean;
}

/** "Get models": search the hubs, what fits this board, and pulls with their progress. */
export interface HubPort {
  sources(): HubSourceView[];
  search(
    query: { source: 'hf' | 'ms'; words: string[]; limit: number },
    signal?: AbortSignal,
  ): Promise<{ owner: string; listings: HubListing[] }>;
  recommend(query: { source: 'hf' | 'ms'; limit: number }, signal?: AbortSignal): Promise<HubRecommendations>;
  pulls: Pick<HubPullJobs, 'list' | 'get' | 'start' | 'cancel' | 'subscribe'>;
}

export interface TelemetryPoint {
  t: number;
  min: number;
  mean: number;
  max: number;
}

/** One live sample: metric name → value, e.g. `cpu.0.util`, `thermal.cpu.temp_c`, `slot.voice.llm.decode_tps`. */
export interface TelemetrySample {
  t: number;
  values: Record<string, number>;
}

export interface TelemetryPort {
  metrics(): string[];
  history(query: {
    metrics: string[];
    since: number;
    until?: number;
    maxPoints?: number;
  }): Record<string, TelemetryPoint[]>;
  /** Live samples as they are taken; returns the unsubscribe function. */
  subscribe(listener: (sample: TelemetrySample) => void): () => void;
  /** The most recent sample, so a new chart is not empty until the next tick. */
  latest(): TelemetrySample | undefined;
}

export interface OtaJobView {
  jobId: string;
  kind: string;
  target: string;
  state: string;
  progress?: { doneBytes: number; totalBytes: number };
  reason?: string;
  createdAt: string;
  updatedAt: string;
}

export interface OtaPort {
  jobs(limit: number): OtaJobView[];
}

/** A workload's endpoint and whether it can serve now. */
import type { WorkloadStatus } from '../workloads/module.js';

export type { WorkloadStatus } from '../workloads/module.js';

export interface WorkloadsPort {
  voice(): WorkloadStatus;
  vision(): WorkloadStatus & { cameraStreamPath?: string };
}

/** Everything the dashboard can show; only `capabilities` and `engine` are always there. */
export interface DashboardSources {
  /** The detected capabilities, or undefined while detection has not run. */
  capabilities(): Capabilities | undefined;
  engine(): EngineStatus;
  health?(): HealthStatus;
  broker?(): BrokerStatus;
  placement?: PlacementPort;
  models?: ModelsPort;
  hub?: HubPort;
  telemetry?: TelemetryPort;
  ota?: OtaPort;
  workloads?: WorkloadsPort;
}
