import { resolveTelemetryConfig, type TelemetryConfigInput } from '../config/sections/telemetry.js';
import type { AgentContext, AgentModule } from '../module.js';
import { type BoardTelemetry, createBoardTelemetry } from './board.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from './runtime-stats.js';

// The board's samples as an agent module of their own, started before the fleet: /metrics, the dashboard's
// charts and Home Assistant over Wyoming need the board's CPU, memory and temperature on a board with no broker
// at all. The fleet, when it runs, delivers the same intervals over MQTT (TelemetryService.deliverTo).

export interface TelemetryModuleOptions {
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
}

export interface TelemetryModule extends AgentModule {
  /** Between start and stop. */
  readonly board: BoardTelemetry | undefined;
}

export function createTelemetryModule(options: TelemetryModuleOptions = {}): TelemetryModule {
  let board: BoardTelemetry | undefined;
  return {
    name: 'telemetry',
    get board() {
      return board;
    },
    start(ctx: AgentContext) {
      const { config } = ctx;
      board = createBoardTelemetry({
        config: resolveTelemetryConfig(config['telemetry'] as TelemetryConfigInput | undefined),
        db: ctx.db,
        deviceId: ctx.identity.deviceId,
        clock: ctx.clock,
        logger: ctx.logger,
        root: config.root,
        dataDir: config.dataDir,
        ...(options.runtime ? { runtime: options.runtime } : {}),
        ...(options.workloads ? { workloads: options.workloads } : {}),
      });
      board.service?.start();
    },
    stop() {
      board?.service?.stop();
      board = undefined;
    },
  };
}
