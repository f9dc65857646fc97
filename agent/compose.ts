import { existsSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { matchProfile } from '../board-support/index.js';
import { modelsConfigOf, storeLimitsOf } from '../models/config.js';
import { ModelCatalog, ModelStore } from '../models/index.js';
import { createOtaModule } from '../ota/device.js';
import { JobJournal } from '../ota/journal.js';
import { ModelStoreInstaller } from '../ota/store-adapter.js';
import { LogTail } from './common/log-tail.js';
import type { AgentConfig } from './config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from './config/sections/slots.js';
import { readCapabilitiesCache } from './detect/cache.js';
import { applyEngineBackends, type Capabilities, detect } from './detect/index.js';
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
import type { SlotName } from './plan/types.js';
import { registerRuntimeCommands } from './runtime/fleet-commands.js';
import { createRuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import type { Runtime } from './runtime/runtime.js';
import { createWorkloadsModule, type WorkloadsModule } from './workloads/module.js';

// Which modules `mnn-edge run` starts and how they see each other. Modules are created here, in dependency
// order, and share typed handles (never module-level state); main.ts starts them in this order.

export const CAPABILITIES_CACHE_FILE = 'capabilities.json';

/** The runtime slots each workload uses (a model shared with another workload restarts there too). */
export const WORKLOAD_SLOTS: Record<'voice' | 'vision', SlotName[]> = {
  voice: ['voice.vad', 'voice.asr', 'voice.llm', 'voice.omni', 'voice.tts'],
  vision: ['vision.vlm'],
};

/** Handles that later modules (and the dashboard) read; filled in as the modules start. */
export interface AgentServices {
  readonly commands: CommandRegistry;
  readonly logs: LogTail;
  capabilities(): Capabilities | undefined;
  models(): { store: ModelStore; catalog: ModelCatalog } | undefined;
  fleet(): FleetModule;
  workloads(): WorkloadsModule;
  runtime(): Runtime | undefined;
  /** What SIGHUP and the fleet's `reload` command do; `next` is the re-read configuration, if any. */
  reload(next: AgentConfig | undefined, reason: string): Promise<Record<string, unknown>>;
}

export interface ComposeOptions {
  agentVersion: string;
  /** The agent's recent log lines (the dashboard's Logs page, the fleet's `logs` command). */
  logs?: LogTail;
  /** Re-reads the configuration from where `run` got it, for `reload`; throws with the reason when invalid. */
  reloadConfig?: () => AgentConfig;
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
        limits: storeLimitsOf(limits),
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
      // The runtime's engine probe says which backends this MNN build has: the planner never picks one it
      // lacks, and the capability document says why ("MNN built without …").
      const engine = runtime.engineAvailability();
      if (engine?.available)
        caps = applyEngineBackends(
          caps,
          engine.info.backends.filter((b) => b.compiledIn).map((b) => b.name),
        );
      // A root without /proc/meminfo (a capture of another board): the engine hosts run on this machine, so
      // its RAM is the budget that matters.
      return boardFromCapabilities(caps, matchProfile(caps), { ramBytes: totalmem() });
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
        publishPlacement();
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
    // Home Assistant gets sensors and a backend select for each placed slot; the choices are the usable backends.
    haSlots: () => {
      const backends = caps?.backends.filter((b) => b.usable).map((b) => b.backend) ?? [];
      return (runtime.runtime()?.slotStats() ?? []).map((s) => ({ name: s.slot, backends }));
    },
  });
  fleetRef = fleet;

  const ota = createOtaModule({
    transport: () => fleet.agent,
    store: () => {
      if (!models) throw new Error('OTA started before the model store');
      return models.store;
    },
    ports: () => {
      const rt = runtime.runtime();
      if (!rt || !models) return undefined;
      const store = models.store;
      return {
        installer: new ModelStoreInstaller(store),
        // The version serving before a job is held from GC until the job commits or rolls back.
        activation: runtimeActivationPort(rt, 'ota', {
          holdForRollback: (refs) => store.setRollbackHold(refs),
        }),
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
      const off = fleet.offReason;
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
        ...(off !== undefined ? { broker: () => ({ state: 'disabled' as const, reason: off }) } : {}),
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

  // The retained documents (capabilities, models, placement) operators and Home Assistant read. Set once the
  // fleet exists (the fleet republishes them on every reconnect) and again whenever they change.
  function publishPlacement(): void {
    const placement = runtime.runtime()?.desired.placement();
    if (placement) fleetRef?.agent?.setDocument('placement', { ...placement });
  }
  function publishModels(): void {
    const store = models?.store;
    if (!store) return;
    const installed = store.list();
    const summary = installed
      .map((p) => `${p.id}@${p.version}`)
      .sort()
      .join(', ');
    fleetRef?.agent?.setDocument('models', {
      // Home Assistant's update entity compares these two strings; a pending OTA job is reported on ota/status.
      installedVersion: summary,
      latestVersion: summary,
      packages: installed.map((p) => ({
        id: p.id,
        version: p.version,
        task: p.task,
        sizeBytes: p.sizeBytes,
        derived: p.derived,
        inUse: p.inUse,
        kept: p.kept,
        rollbackHold: p.rollbackHold,
        lastUsedAt: p.lastUsedAt,
      })),
    });
  }
  function publishCapabilities(): void {
    if (!caps) return;
    const engine = runtime.runtime() ? runtime.engineAvailability() : undefined;
    fleetRef?.agent?.setDocument('capabilities', {
      ...caps,
      agentVersion: options.agentVersion,
      engine: engine?.available
        ? { available: true, mnnVersion: engine.info.mnnVersion }
        : { available: false, reason: engine?.reason ?? 'not probed yet' },
    });
  }
  const documentsModule: AgentModule = {
    name: 'documents',
    start() {
      publishCapabilities();
      publishModels();
      publishPlacement();
      const store = models?.store;
      if (store) {
        store.on('installed', publishModels);
        store.on('removed', publishModels);
      }
    },
    stop() {
      models?.store.off('installed', publishModels);
      models?.store.off('removed', publishModels);
    },
  };

  /** Re-read what can change without a restart: the board (live detection), slots, placement, documents. */
  async function reload(next: AgentConfig | undefined, reason: string): Promise<Record<string, unknown>> {
    const rt = runtime.runtime();
    const detected = loadCapabilities(next ?? config);
    caps = detected.caps;
    if (rt && next) await rt.configure(slotSpecsFromConfig(next['slots'] as SlotsConfig | undefined));
    const placement = rt ? await rt.replan(reason) : undefined;
    publishCapabilities();
    publishModels();
    publishPlacement();
    return {
      reloaded: true,
      config: next ? 'slots re-read' : 'unchanged',
      capabilities: detected.source,
      ...(placement ? { revision: runtime.runtime()?.desired.revision().revision } : {}),
    };
  }
  commands.register({
    name: 'reload',
    summary: 're-read the configuration (slots), detect the board again and replan',
    timeoutMs: 60_000,
    handler: async () => reload(options.reloadConfig?.(), 'reload requested over MQTT'),
  });

  commands.register<{ workload: 'voice' | 'vision' }>({
    name: 'restart-workload',
    summary: "restart the engine hosts serving a workload's slots (in-flight requests are cancelled)",
    params: {
      type: 'object',
      additionalProperties: false,
      required: ['workload'],
      properties: { workload: { enum: ['voice', 'vision'] } },
    },
    handler: (params) => {
      const rt = runtime.runtime();
      if (!rt) throw new Error('the runtime is not running');
      const slots = WORKLOAD_SLOTS[params.workload];
      const restarted = rt.restart(slots, `operator restart-workload ${params.workload}`);
      return { workload: params.workload, slots, restarted };
    },
  });

  const services: AgentServices = {
    commands,
    logs,
    capabilities: () => caps,
    models: () => models,
    fleet: () => fleet,
    workloads: () => workloads,
    runtime: () => runtime.runtime(),
    reload,
  };
  const modules: AgentModule[] = [
    detectModule,
    modelsModule,
    runtime,
    fleet,
    documentsModule,
    ota,
    workloads,
    dashboard,
    feedsModule,
    mdns,
  ];
  return { modules, services };
}
