import type { Capabilities } from '../lib/capabilities.js';
import { errorMessage } from '../lib/errors.js';
import { EventBus } from '../lib/event-bus.js';
import type { Logger } from '../lib/log.js';
import { LogTail } from '../lib/log-tail.js';
import { resolveOtaConfig } from '../ota/config.js';
import { JobJournal } from '../ota/jobs/journal.js';
import { ModelStoreInstaller } from '../ota/jobs/store-adapter.js';
import { createOtaModule } from '../ota/module.js';
import type { ConfigInputs } from './config/load.js';
import { OverlayStore } from './config/overlay-store.js';
import type { AgentConfig } from './config/schema.js';
import type { ConfigSource } from './config/sources.js';
import { createDashboardModule } from './dashboard-api/routes.js';
import { dashboardSourcesFrom } from './dashboard-api/sources.js';
import { createDetectModule } from './detect/module.js';
import { createDocumentsModule } from './documents/module.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule, type FleetModule } from './fleet/module.js';
import type { BoardInfo } from './fleet/protocol.js';
import { createSessionLimiter, type SessionLimiter } from './http/session-limits.js';
import { createModelsModule, type InstalledModels } from './installed-models/module.js';
import { createMdnsModule } from './mdns/module.js';
import { createMetricsModule } from './metrics/module.js';
import type { AgentBus, AgentContext, AgentModule, PublishEvent } from './module.js';
import { createReloader } from './reload.js';
import { runtimeSlotStates } from './runtime/measuring/slot-states.js';
import { createRuntimeModule, type RuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import type { Runtime } from './runtime/runtime.js';
import { createSettingsModule, type SettingsModule } from './settings/module.js';
import { checkSlots } from './settings/slot-check.js';
import { slotChoiceSource } from './settings/slot-select.js';
import { createTelemetryModule, type TelemetryModule } from './telemetry/module.js';
import { createWorkloadsModule, type WorkloadsModule } from './workloads/module.js';
import { boardStatusOf } from './workloads/tools/board-status.js';
import { wyomingMdnsServices } from './workloads/wyoming/start.js';

export { CAPABILITIES_CACHE_FILE, loadCapabilities } from './detect/module.js';
export { WORKLOAD_SLOTS } from './workloads/module.js';

// Which modules `mnn-edge run` starts, in start order, and the typed handles through which they see each other
// (never module-level state); main.ts starts them in this order and stops them in reverse. What a feature
// registers (routes, sockets, fleet commands, events) is wired in its own create…Module.

/** Handles that later modules (and the dashboard) read; filled in as the modules start. */
export interface AgentServices {
  readonly commands: CommandRegistry;
  readonly logs: LogTail;
  capabilities(): Capabilities | undefined;
  models(): InstalledModels | undefined;
  fleet(): FleetModule;
  workloads(): WorkloadsModule;
  runtime(): Runtime | undefined;
  settings(): SettingsModule;
  /** The reload path every run-time change takes; `next` is the configuration to apply, if any. */
  reload(next: AgentConfig | undefined, reason: string): Promise<Record<string, unknown>>;
  /** SIGHUP and the fleet's `reload`: re-read the file and the overlay, then the reload path. */
  reloadFromDisk(reason: string): Promise<Record<string, unknown>>;
}

/** GET /metrics over what the runtime, the fleet, the workloads and the OTA journal keep anyway. */
function metricsModule(
  platform: Platform,
  fleet: FleetModule,
  workloads: WorkloadsModule,
  more: { version: string; settings: SettingsModule; telemetry: TelemetryModule },
): AgentModule {
  const { runtime } = platform;
  return createMetricsModule({
    snapshot: (ctx) => {
      const rt = runtime.runtime();
      const agent = fleet.agent;
      const latest = more.telemetry.board?.service?.latest();
      return {
        version: more.version,
        slots: rt?.slotStats() ?? [],
        distributions: rt?.slotMetrics() ?? [],
        queueDepths: workloads.queueDepths(),
        hosts: rt?.state().instances ?? [],
        ...(agent ? { outbox: agent.outbox.stats(), mqtt: { connected: agent.connected } } : {}),
        otaJobs: otaJobStates(ctx.db),
        ...(latest ? { telemetry: latest.metrics } : {}),
        ...(more.settings.service() ? { settingsRevision: more.settings.service()!.revision } : {}),
        toolCalls: workloads.assistant()?.stats.totals() ?? [],
      };
    },
    watch: (count) => {
      const out: Array<() => void> = [];
      const rt = runtime.runtime();
      if (rt) {
        out.push(rt.events.on('fallback', () => count('fallbacks')));
        out.push(rt.events.on('switch', () => count('swaps')));
      }
      let connections = 0;
      const agent = fleet.agent;
      if (agent) out.push(agent.events.on('connected', () => connections++ > 0 && count('reconnects')));
      return out;
    },
  });
}

/** Jobs in the OTA journal by state; none when the journal table is not there (OTA off). */
function otaJobStates(db: AgentContext['db']): Record<string, number> {
  try {
    const rows = db.prepare('SELECT state, COUNT(*) AS n FROM ota_jobs GROUP BY state').all() as Array<{
      state: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } catch {
    return {};
  }
}

/** Composed without `run` (tests): the configuration given is the file source, the overlay its data dir's. */
function givenInputs(config: AgentConfig): LoadedConfig {
  const store = new OverlayStore(config.dataDir);
  const inputs: ConfigInputs = {
    source: 'the configuration given',
    file: { ...config },
    flags: {},
    store,
    overlay: store.load(),
  };
  return { config, inputs, sources: new Map() };
}

/** The run-time settings over the inputs `run` read; a slot change is checked against the installed models and
 *  the planner before anything is written. */
function settingsModule(
  config: AgentConfig,
  options: ComposeOptions,
  parts: {
    platform: Platform;
    fleet: FleetModule;
    commands: CommandRegistry;
    reload: ReturnType<typeof createReloader>;
    bus: AgentBus;
  },
): SettingsModule {
  const loaded = options.loaded ?? givenInputs(config);
  const { models, runtime } = parts.platform;
  return createSettingsModule({
    inputs: loaded.inputs,
    sources: loaded.sources,
    commands: parts.commands,
    apply: (next, reason) => parts.reload(next, reason, { detect: false }),
    check: async (next, changes) => {
      const rt = runtime.runtime();
      await checkSlots(next, changes, {
        catalog: () => models.planCatalog(),
        ...(rt ? { preview: (slots) => rt.preview(slots) } : {}),
      });
    },
    publish: (doc) => parts.fleet.agent?.setDocument('config', doc),
    bus: parts.bus,
  });
}

export interface ComposeOptions {
  agentVersion: string;
  /** The agent's recent log lines (the dashboard's Logs page, the fleet's `logs` command). */
  logs?: LogTail;
  /** Re-reads the configuration from where `run` got it, for `reload`; throws with the reason when invalid. */
  reloadConfig?: () => LoadedConfig;
  /** The inputs `run` composed the configuration from (file, overlay, flags); default: the config alone. */
  loaded?: LoadedConfig;
}

export interface LoadedConfig {
  config: AgentConfig;
  inputs: ConfigInputs;
  sources: Map<string, ConfigSource>;
}

export function boardInfoOf(caps: Capabilities | undefined): BoardInfo | undefined {
  if (!caps) return undefined;
  const info: BoardInfo = { family: caps.soc.family.value ?? 'unknown' };
  if (caps.board.model.value) info.model = caps.board.model.value;
  if (caps.soc.name.value) info.soc = caps.soc.name.value;
  return info;
}

/** OTA's device ports over the running runtime and model store; undefined until both run. */
function otaModule(runtime: RuntimeModule, models: () => InstalledModels | undefined, fleet: FleetModule) {
  return createOtaModule({
    transport: () => fleet.agent,
    store: () => {
      const m = models();
      if (!m) throw new Error('OTA started before the model store');
      return m.store;
    },
    ports: () => {
      const rt = runtime.runtime();
      const store = models()?.store;
      if (!rt || !store) return undefined;
      return {
        installer: new ModelStoreInstaller(store),
        // The version serving before a job is held from GC until the job commits or rolls back.
        activation: runtimeActivationPort(rt, {
          holdForRollback: (refs) => store.setRollbackHold(refs),
        }),
        probe: runtimeHealthProbe(rt),
      };
    },
  });
}

/** What the board can do, which models it holds, what runs where: the modules every other one reads. */
function platformModules(commands: CommandRegistry, publishEvent: PublishEvent, bus: AgentBus) {
  const detect = createDetectModule({ commands });
  const models = createModelsModule({
    commands,
    publishEvent,
    // Hub pulls download under the limits of the `ota` section, as OTA's jobs do.
    downloadPolicy: (config) => resolveOtaConfig(config['ota']).download,
  });
  const runtime = createRuntimeModule({
    detected: detect,
    catalog: () => models.planCatalog(),
    inUse: (refs) => models.inUse(refs),
    installs: models.installs,
    commands,
    publishEvent,
    bus,
  });
  const slotStates = () => {
    const rt = runtime.runtime();
    return rt ? runtimeSlotStates(rt) : [];
  };
  const engine = () => (runtime.runtime() ? runtime.engineAvailability() : undefined);
  return { detect, models, runtime, slotStates, engine };
}
type Platform = ReturnType<typeof platformModules>;

/** The MQTT side: the connection and commands, the retained documents, OTA jobs. */
function fleetModules(
  platform: Platform,
  shared: {
    agentVersion: string;
    commands: CommandRegistry;
    logs: LogTail;
    bus: AgentBus;
    telemetry: TelemetryModule;
  },
) {
  const { detect, models, runtime } = platform;
  const fleet = createFleetModule({
    agentVersion: shared.agentVersion,
    commands: shared.commands,
    logs: shared.logs,
    bus: shared.bus,
    board: () => boardInfoOf(detect.capabilities()),
    boardTelemetry: () => shared.telemetry.board,
    // Home Assistant gets sensors and a backend select for each placed slot; the choices are the usable backends.
    haSlots: () => {
      const backends =
        detect
          .capabilities()
          ?.backends.filter((b) => b.usable)
          .map((b) => b.backend) ?? [];
      return (runtime.runtime()?.slotStats() ?? []).map((s) => ({ name: s.slot, backends }));
    },
    // …and a model select per slot: the installed models whose task fits, for the slots as the settings run them
    // (the fleet hears them on the bus: the settings module is composed after it and publishes through it).
    haModelSlots: slotChoiceSource({
      catalog: () => models.planCatalog(),
      store: () => models.models()?.store,
    }),
  });
  const documents = createDocumentsModule({
    agentVersion: shared.agentVersion,
    fleet: () => fleet.agent,
    capabilities: () => detect.capabilities(),
    store: () => models.models()?.store,
    placement: () => runtime.runtime()?.desired.placement(),
    slotStates: platform.slotStates,
    engine: platform.engine,
    bus: shared.bus,
  });
  const ota = otaModule(runtime, () => models.models(), fleet);
  return { fleet, documents, ota };
}

/** The local network side: the dashboard (its pages and live feeds) and the mDNS announcement. */
function localModules(
  platform: Platform,
  fleet: FleetModule,
  workloads: WorkloadsModule,
  shared: { agentVersion: string; logs: LogTail; sessions: SessionLimiter; telemetry: TelemetryModule },
) {
  const { detect, models, runtime } = platform;
  const dashboardParts = dashboardSourcesFrom({
    fleet: () => fleet.agent,
    fleetOff: () => fleet.offReason,
    boardTelemetry: () => shared.telemetry.board,
    runtime: () => runtime.runtime(),
    board: () => runtime.board(),
    engine: () => runtime.engineAvailability(),
    capabilities: () => detect.capabilities(),
    store: () => models.models()?.store,
    hubPulls: () => models.pulls(),
    planBoard: () => runtime.board(),
    workloads,
    otaJournal: (db) => new JobJournal(db),
  });
  const dashboard = createDashboardModule({
    version: shared.agentVersion,
    sessions: shared.sessions,
    logTail: shared.logs,
    sources: dashboardParts.sources,
  });
  const mdns = createMdnsModule({
    board: () => detect.capabilities()?.board.model.value ?? undefined,
    soc: () => detect.capabilities()?.soc.name.value ?? undefined,
    version: shared.agentVersion,
    // Home Assistant finds the voice services as _wyoming._tcp while the Wyoming server listens.
    extraServices: () => wyomingMdnsServices(workloads),
  });
  return { dashboard, dashboardFeeds: dashboardParts.feeds, mdns };
}

/** Each module owns the bus listeners it registered under its name: they go when it stops, whatever it did. */
function ownedBy(bus: AgentBus, modules: AgentModule[]): AgentModule[] {
  return modules.map((m) => {
    const stop = m.stop?.bind(m);
    return Object.assign(m, {
      async stop() {
        try {
          await stop?.();
        } finally {
          bus.removeOwner(m.name);
        }
      },
    });
  });
}

export function composeModules(config: AgentConfig, options: ComposeOptions) {
  const commands = new CommandRegistry();
  const logs = options.logs ?? new LogTail();
  // Events between modules; a module's listeners are removed when it stops (ownedBy below).
  let busLog: Logger | undefined;
  const bus: AgentBus = new EventBus((event, owner, err) =>
    busLog?.warn('event listener failed', { event, owner, error: errorMessage(err) }),
  );
  // Watch-mode answers, placement changes and fallbacks go out on MQTT `events` once the fleet is connected.
  const publishEvent: PublishEvent = (type, data) => bus.emit('device.event', { type, data });
  // One limit for every live session: the dashboard's telemetry stream and the voice and vision sockets.
  const sessions = createSessionLimiter(config.http.maxSessions);
  const shared = { agentVersion: options.agentVersion, commands, logs, sessions };

  const platform = platformModules(commands, publishEvent, bus);
  const { detect, models, runtime } = platform;
  const workloads = createWorkloadsModule({
    runtime: () => runtime.runtime(),
    slotStates: platform.slotStates,
    control: () => runtime.runtime(),
    // A wake-word package's keywords are read from its installed files.
    packageDir: (ref) => {
      const store = platform.models.models()?.store;
      return store?.get(ref) ? store.packageDir(ref) : undefined;
    },
    sessions,
    publishEvent,
    commands,
    agentVersion: options.agentVersion,
    // The MCP server's board_status; announce stays off for remote clients until the settings enable it.
    mcpServer: {
      status: boardStatusOf({
        slotStates: platform.slotStates,
        capabilities: () => detect.capabilities(),
        version: options.agentVersion,
      }),
    },
    pulls: () => platform.models.pulls(),
  });
  // The board's samples, for /metrics and the dashboard with or without a broker; the fleet delivers them.
  const telemetry = createTelemetryModule({
    runtime: { slots: () => runtime.runtime()?.slotStats() ?? [] },
    workloads,
  });
  const { fleet, documents, ota } = fleetModules(platform, { ...shared, bus, telemetry });
  const { dashboard, dashboardFeeds, mdns } = localModules(platform, fleet, workloads, {
    ...shared,
    telemetry,
  });

  let identity: AgentContext['identity'] | undefined;
  const reload = createReloader(config, {
    ...platform,
    documents,
    fleet,
    telemetry,
    workloads,
    identity: () => identity,
  });
  const settings = settingsModule(config, options, { platform, fleet, commands, reload, bus });
  // The file (or overlay) re-read: the settings service runs on what was read, the reload path applies it.
  const reloadFromDisk = async (reason: string) => {
    const loaded = options.reloadConfig?.();
    if (loaded) settings.service()?.reloaded(loaded);
    return reload(loaded?.config, reason);
  };
  commands.register({
    name: 'reload',
    summary: 're-read the configuration (file and run-time settings), detect the board again and replan',
    timeoutMs: 60_000,
    handler: async () => reloadFromDisk('reload requested over MQTT'),
  });
  const identityTap: AgentModule = {
    name: 'identity',
    start(ctx) {
      identity = ctx.identity;
      busLog = ctx.logger;
    },
  };

  const services: AgentServices = {
    commands,
    logs,
    capabilities: () => detect.capabilities(),
    models: () => models.models(),
    fleet: () => fleet,
    workloads: () => workloads,
    runtime: () => runtime.runtime(),
    settings: () => settings,
    reload,
    reloadFromDisk,
  };
  const metrics = metricsModule(platform, fleet, workloads, {
    version: options.agentVersion,
    settings,
    telemetry,
  });
  const modules: AgentModule[] = ownedBy(bus, [
    identityTap,
    detect,
    models,
    runtime,
    telemetry,
    fleet,
    documents,
    ota,
    workloads,
    dashboard,
    dashboardFeeds,
    mdns,
    settings,
    metrics,
  ]);
  return { modules, services };
}
