import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { TelemetryConfig } from '../config/sections/telemetry.js';
import { TelemetryHistory } from './history.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from './runtime-stats.js';
import { defaultSamplers, type Sampler } from './samplers.js';
import { TelemetryService } from './service.js';

// The board's own samples (CPU, memory, thermal zones, network, disk, the slots' gauges) and their local history:
// what /metrics, the dashboard and, while the fleet runs, MQTT telemetry are made of.

export interface BoardTelemetry {
  /** Undefined when `telemetry.enabled` is false: nothing samples, the history stays as it was. */
  readonly service: TelemetryService | undefined;
  readonly history: TelemetryHistory;
}

export interface BoardTelemetryOptions {
  config: TelemetryConfig;
  db: Db;
  deviceId: string;
  clock: Clock;
  /** The service's own (already named) logger. */
  logger: Logger;
  /** Where the system samplers look: `/` on a board; the disk sampler watches the data directory. */
  root: string;
  dataDir: string;
  /** Default: the system samplers. */
  samplers?: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
}

export function createBoardTelemetry(o: BoardTelemetryOptions): BoardTelemetry {
  const { config, db, clock, logger } = o;
  const history = new TelemetryHistory(db, config.history, clock);
  const service = config.enabled
    ? new TelemetryService({
        deviceId: o.deviceId,
        config,
        db,
        history,
        samplers:
          o.samplers ?? defaultSamplers({ root: o.root, dataDir: o.dataDir, monotonicMs: clock.monotonicMs }),
        ...(o.runtime ? { runtime: o.runtime } : {}),
        ...(o.workloads ? { workloads: o.workloads } : {}),
        clock,
        logger,
      })
    : undefined;
  return { service, history };
}
