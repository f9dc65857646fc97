import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { matchProfile } from '../board-support/index.js';
import { modelsConfigOf } from '../models/config.js';
import { ModelCatalog, ModelStore } from '../models/index.js';
import { createOtaModule } from '../ota/device.js';
import { JobJournal } from '../ota/journal.js';
import { ModelStoreInstaller } from '../ota/store-adapter.js';
import { LogTail } from './common/log-tail.js';
import type { AgentConfig } from './config/schema.js';
import { readCapabilitiesCache } from './detect/cache.js';
import { type Capabilities, detect } from './detect/index.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule, type FleetModule } from './fleet/module.js';
import type { BoardInfo } from './fleet/protocol.js';
import {
  brokerStatusFrom,
  engineStatusFrom,
  feedFromSnapshots,
  modelsPortFrom,
  otaPortFrom,
  placementPortFrom,
  SampleHub,
  telemetryPortFrom,
} from './http/api/adapters.js';
import { createSessionLimiter } from './http/api/limits.js';
import type { DashboardSources } from './http/api/ports.js';
import { createDashboardModule } from './http/dashboard-routes.js';
import type { AgentContext, AgentModule } from './main.js';
import { createMdnsModule } from './mdns/module.js';
import { boardFromCapabilities } from './plan/from-capabilities.js';
import { catalogFromStore } from './plan/from-catalog.js';
import { registerRuntimeCommands } from './runtime/fleet-commands.js';
import { createRuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import type { Runtime } from './runtime/runtime.js';
import { createWorkloadsModule, type WorkloadsModule } from './workloads/module.js';

// Which modules `mnn-edge run` starts and how they see each other. Modules are created here, in dependency
// order, and share typed handles (never module-level state); main.ts starts them in this order.

export const CAPABILITIES_CACHE_FILE = 'capabilities.json';

/** Handles that later modules (and the dashboard) read; filled in as the modules start. */
export interface AgentServices {
  readonly commands: CommandRegistry;
  readonly logs: LogTail;
  capabilities(): Capabilities | undefined;
  models(): { store: ModelStore; catalog: ModelCatalog } | undefined;
  fleet(): FleetModule;
  workloads(): WorkloadsModule;
  runtime(): Runtime | undefined;
}

export interface ComposeOptions {
  agentVersion: string;
  /** The agent's recent log lines (the dashboard's Logs page, the fleet's `logs` command). */
  logs?: LogTail;
}

/** A privileged ExecStartPre writes the cache (root-only files such as the RKNPU debugfs); else probe now. */
export function loadCapabilities(config: AgentConfig): { caps: Capabilities; source: string } {
  const cache = join(config.dataDir, CAPABILITIES_CACHE_FILE);
  if (config.root === '/' && existsSync(cache)) {
    try {
      return { caps: readCapabilitiesCache(cache), source: cache };
    } catch {
      // A stale or damaged cache is not fatal: live detection below still works, with fewer privileges.
    }
  }
  return { caps: detect({ root: config.root }), source: `live detection of ${config.root}` };
}

export function boardInfoOf(caps: Capabilities | undefined): BoardInfo | undefined {
  if (!caps) return undefined;
  const info: BoardInfo = { family: caps.soc.family.value ?? 'unknown' };
  if (caps.board.model.value) info.model = caps.board.model.value;
  if (caps.soc.name.value) info.soc = caps.soc.name.value;
  return info;
}

export function composeModules(config: AgentConfig, options: ComposeOptions) {
  const commands = new CommandRegistry();
  const logs = options.logs ?? new LogTail();
  let caps: Capabilities | undefined;
  let models: { store: ModelStore; catalog: ModelCatalog } | undefined;

  const detectModule: AgentModule = {
    name: 'detect',
    start(ctx: AgentContext) {
      const loaded = loadCapabilities(ctx.config);
      caps = loaded.caps;
      ctx.logger.info('capabilities', {
        source: loaded.source,
        family: caps.soc.family.value,
        soc: caps.soc.name.value,
        backends: caps.backends.filter((b) => b.usable).map((b) => b.backend),
      });
      commands.register<{ live?: boolean }>({
        name: 'detect',
        summary: 'the capability document (cached at start; live: true probes again)',
        params: { type: 'object', additionalProperties: false, properties: { live: { type: 'boolean' } } },
        handler: (params) => {
          if (params.live) caps = detect({ root: ctx.config.root });
          return caps;
        },
      });
    },
  };

  const modelsModule: AgentModule = {
    name: 'models',
    start(ctx: AgentContext) {
      const limits = modelsConfigOf(ctx.config['models']);
      const { store, recovery } = ModelStore.open({
        dataDir: ctx.config.dataDir,
        db: ctx.db,
        log: ctx.logger,
        clock: ctx.clock,
        ...(limits.maxPackageBytes !== undefined
          ? { limits: { maxTotalBytes: limits.maxPackageBytes } }
          : {}),
      });
      models = { store, catalog: new ModelCatalog(store) };
      ctx.logger.info('model store ready', { root: store.root, recovery });
      commands.register({
        name: 'list-models',
        summary: 'installed model packages with their variants and state',
        handler: () => store.list(),
      });
    },
    stop() {
      models?.store.close();
      models = undefined;
    },
  };

  // Watch-mode answers, placement changes and fallbacks go out on MQTT `events` once the fleet is connected.
  let fleetRef: FleetModule | undefined;
  const publishEvent = (type: string, data: Record<string, unknown>) =>
    fleetRef?.agent?.publishEvent(type, data);

  const runtime = createRuntimeModule({
    board: () => {
      if (!caps) throw new Error('the runtime started before detection');
      return boardFromCapabilities(caps, matchProfile(caps));
    },
    catalog: () => catalogFromStore(models?.catalog.variants() ?? []),
    inUse: (refs) => models?.store.setInUse(refs),
    installs: {
      on: (event, listener) => {
        const store = models?.store;
        if (!store) return () => {};
        store.on(event, listener);
        return () => store.off(event, listener);
      },
    },
    onStarted: (rt) => {
      registerRuntimeCommands(commands, rt);
      rt.events.on('placement', (e) => {
        fleetRef?.agent?.setDocument('placement', { revision: e.revision, reason: e.reason, ...e.placement });
        publishEvent('runtime.placement', { revision: e.revision, reason: e.reason });
      });
      for (const ev of ['fallback', 'recovered', 'memory-released', 'host-exit'] as const)
        rt.events.on(ev, (data) => publishEvent(`runtime.${ev}`, { ...data }));
    },
  });

  // One limit for every live session: the dashboard's telemetry stream and the voice and vision sockets.
  const sessions = createSessionLimiter(config.http.maxSessions);
  const workloads = createWorkloadsModule({
    runtime: () => runtime.runtime(),
    sessions,
    publishEvent,
  });
  const fleet = createFleetModule({
    agentVersion: options.agentVersion,
    commands,
    logs,
    board: () => boardInfoOf(caps),
    workloads,
    runtime: { slots: () => runtime.runtime()?.slotStats() ?? [] },
  });
  fleetRef = fleet;

  const ota = createOtaModule({
    mqtt: () => fleet.agent?.client,
    store: () => {
      if (!models) throw new Error('OTA started before the model store');
      return models.store;
    },
    ports: () => {
      const rt = runtime.runtime();
      if (!rt || !models) return undefined;
      return {
        installer: new ModelStoreInstaller(models.store),
        activation: runtimeActivationPort(rt),
        probe: runtimeHealthProbe(rt),
      };
    },
  });

  const hub = new SampleHub();
  const feeds: Array<() => void> = [];
  const feedsModule: AgentModule = {
    name: 'dashboard-feeds',
    start() {},
    stop() {
      for (const dispose of feeds.splice(0)) dispose();
    },
  };
  const dashboard = createDashboardModule({
    version: options.agentVersion,
    sessions,
    logTail: logs,
    sources: (ctx): DashboardSources => {
      const agent = fleet.agent;
      const rt = runtime.runtime();
      const broker = agent ? brokerStatusFrom(agent) : undefined;
      if (agent) feeds.push(feedFromSnapshots(hub, () => agent.telemetry?.latest()));
      if (broker) feeds.push(broker.dispose);
      return {
        capabilities: () => caps,
        engine: engineStatusFrom(
          () =>
            runtime.engineAvailability() ?? {
              available: false,
              reason: 'the runtime module has not probed the engine yet',
            },
        ),
        ...(agent && broker
          ? { broker: broker.status, telemetry: telemetryPortFrom(agent.history, hub) }
          : {}),
        ...(models ? { models: modelsPortFrom(models.store) } : {}),
        ...(rt ? { placement: placementPortFrom(rt) } : {}),
        ota: otaPortFrom(new JobJournal(ctx.db)),
        workloads: { voice: () => workloads.voiceStatus(), vision: () => workloads.visionStatus() },
      };
    },
  });

  const mdns = createMdnsModule({
    board: () => caps?.board.model.value ?? undefined,
    soc: () => caps?.soc.name.value ?? undefined,
    version: options.agentVersion,
  });

  const services: AgentServices = {
    commands,
    logs,
    capabilities: () => caps,
    models: () => models,
    fleet: () => fleet,
    workloads: () => workloads,
    runtime: () => runtime.runtime(),
  };
  const modules: AgentModule[] = [
    detectModule,
    modelsModule,
    runtime,
    fleet,
    ota,
    workloads,
    dashboard,
    feedsModule,
    mdns,
  ];
  return { modules, services };
}
