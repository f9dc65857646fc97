import type { EngineAvailability } from '../../engine/src/loader.js';
import type { Capabilities } from '../../lib/capabilities.js';
import { modelsConfigOf } from '../../models/config.js';
import type { HubPullJobs } from '../../models/hub/pull-jobs.js';
import type { ModelStore } from '../../models/index.js';
import { DEFAULT_CONTEXT, planPolicyFromConfig, type RuntimeConfig } from '../config/sections/slots.js';
import type { FleetAgent } from '../fleet/agent.js';
import type { AgentContext, AgentModule, Handle } from '../module.js';
import { RECOMMEND_ROLES, type RecommendRole } from '../plan/recommend.js';
import type { PlanBoard } from '../plan/types.js';
import { runtimeHealth } from '../runtime/measuring/slot-states.js';
import { placementPortFrom } from '../runtime/placement-port.js';
import type { Runtime } from '../runtime/runtime.js';
import type { BoardTelemetry } from '../telemetry/board.js';
import type { WorkloadsModule } from '../workloads/module.js';
import {
  brokerStatusFrom,
  engineStatusFrom,
  feedFromSnapshots,
  modelsPortFrom,
  type OtaJournal,
  otaPortFrom,
  SampleHub,
  telemetryPortFrom,
} from './adapters.js';
import { hubPortFrom } from './hub-port.js';
import type { DashboardSources } from './ports.js';

// The dashboard's ports built from the running modules at its start, and the module that ends the live feeds
// (telemetry samples, broker status) when the agent stops.

export interface DashboardModules {
  fleet: Handle<FleetAgent>;
  /** Why the fleet is off (no broker configured), when it is. */
  fleetOff?: () => string | undefined;
  /** The board's samples and their history, with or without a broker (agent/telemetry/module.ts). */
  boardTelemetry: Handle<BoardTelemetry>;
  runtime: Handle<Runtime>;
  /** The board the runtime plans for: the pin dropdown offers what it can use. */
  board?: Handle<Pick<PlanBoard, 'backends'>>;
  engine: Handle<EngineAvailability>;
  capabilities: Handle<Capabilities>;
  store: Handle<ModelStore>;
  /** The agent's hub pulls (the models module's), for "Get models". */
  hubPulls?: Handle<HubPullJobs>;
  /** The full board the runtime plans for: hub models are ranked against it. */
  planBoard?: Handle<PlanBoard>;
  workloads: Pick<WorkloadsModule, 'voiceStatus' | 'visionStatus'>;
  /** OTA's job journal over the agent's database, opened at the dashboard's start (OTA's, from compose.ts). */
  otaJournal?: (db: AgentContext['db']) => OtaJournal;
}

const CONTEXT_TOKENS = Object.fromEntries(RECOMMEND_ROLES.map((r) => [r, DEFAULT_CONTEXT[r]])) as Record<
  RecommendRole,
  number
>;

/** "Get models" over the models module's pulls, with the runtime's board, policy and probes to rank by. */
function hubSource(modules: DashboardModules, ctx: AgentContext): Pick<DashboardSources, 'hub'> {
  const pulls = modules.hubPulls?.();
  if (pulls === undefined) return {};
  return {
    hub: hubPortFrom({
      models: modelsConfigOf(ctx.config['models']),
      env: process.env,
      store: modules.store,
      pulls,
      recommendContext: () => {
        const board = modules.planBoard?.();
        const rt = modules.runtime();
        if (board === undefined || rt === undefined) return undefined;
        return {
          board,
          policy: planPolicyFromConfig(ctx.config['runtime'] as RuntimeConfig | undefined),
          probes: rt.probes.all(),
          engineVersion: rt.engineVersion,
          contextTokens: CONTEXT_TOKENS,
        };
      },
    }),
  };
}

export function dashboardSourcesFrom(modules: DashboardModules): {
  sources: (ctx: AgentContext) => DashboardSources;
  feeds: AgentModule;
} {
  const hub = new SampleHub();
  const feeds: Array<() => void> = [];
  const sources = (ctx: AgentContext): DashboardSources => {
    const agent = modules.fleet();
    const rt = modules.runtime();
    const store = modules.store();
    const broker = agent ? brokerStatusFrom(agent) : undefined;
    const off = modules.fleetOff?.();
    const board =
      modules.boardTelemetry?.() ??
      (agent ? { service: agent.telemetry, history: agent.history } : undefined);
    if (board?.service) feeds.push(feedFromSnapshots(hub, () => board.service?.latest()));
    if (broker) feeds.push(broker.dispose);
    return {
      capabilities: () => modules.capabilities(),
      engine: engineStatusFrom(
        () =>
          modules.engine() ?? {
            available: false,
            reason: 'the runtime module has not probed the engine yet',
          },
      ),
      ...(broker ? { broker: broker.status } : {}),
      ...(board ? { telemetry: telemetryPortFrom(board.history, hub) } : {}),
      ...(off !== undefined ? { broker: () => ({ state: 'disabled' as const, reason: off }) } : {}),
      ...(store ? { models: modelsPortFrom(store) } : {}),
      ...hubSource(modules, ctx),
      ...(rt
        ? {
            placement: placementPortFrom(rt, modules.board ?? (() => undefined)),
            health: () => runtimeHealth(rt),
          }
        : {}),
      ...(modules.otaJournal ? { ota: otaPortFrom(modules.otaJournal(ctx.db)) } : {}),
      workloads: {
        voice: () => modules.workloads.voiceStatus(),
        vision: () => modules.workloads.visionStatus(),
      },
    };
  };
  return {
    sources,
    feeds: {
      name: 'dashboard-feeds',
      start() {},
      stop() {
        for (const dispose of feeds.splice(0)) dispose();
      },
    },
  };
}
