import type { Capabilities } from '../lib/capabilities.js';
import { errorMessage } from '../lib/errors.js';
import { EventBus } from '../lib/event-bus.js';
import type { Logger } from '../lib/log.js';
import { LogTail } from '../lib/log-tail.js';
import { resolveOtaConfig } from '../ota/config.js';
import { JobJournal } from '../ota/jobs/journal.js';
import { ModelStoreInstaller } from '../ota/jobs/store-adapter.js';
import { createOtaModule } from '../ota/module.js';
import { localModules } from './compose/local.js';
import { metricsModule } from './compose/metrics.js';
import { type Platform, platformModules } from './compose/platform.js';
import { type LoadedConfig, registerReloadFromDisk, settingsModule } from './compose/settings.js';
import { workloadsModule } from './compose/workloads.js';
import type { AgentConfig } from './config/schema.js';
import { createDocumentsModule } from './documents/module.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule, type FleetModule } from './fleet/module.js';
import type { BoardInfo } from './fleet/protocol.js';
import { createSessionLimiter } from './http/session-limits.js';
import type { InstalledModels } from './installed-models/module.js';
import type { AgentBus, AgentContext, AgentModule, PublishEvent } from './module.js';
import { createReloader } from './reload.js';
import type { RuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import type { Runtime } from './runtime/runtime.js';
import type { SettingsModule } from './settings/module.js';
import { slotChoiceSource } from './settings/slot-select.js';
import { createTelemetryModule, type TelemetryModule } from './telemetry/module.js';
import type { WorkloadsModule } from './workloads/module.js';

export type { LoadedConfig } from './compose/settings.js';
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

export interface ComposeOptions {
  agentVersion: string;
  /** The agent's recent log lines (the dashboard's Logs page, the fleet's `logs` command). */
  logs?: LogTail;
  /** Re-reads the configuration from where `run` got it, for `reload`; throws with the reason when invalid. */
  reloadConfig?: () => LoadedConfig;
  /** The inputs `run` composed the configuration from (file, overlay, flags); default: the config alone. */
  loaded?: LoadedConfig;
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
        activation: runtimeActivationPort(rt, { rollbackHold: store }),
        probe: runtimeHealthProbe(rt),
      };
    },
  });
}

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

  // Hub pulls download under the limits of the `ota` section, as OTA's jobs do.
  const platform = platformModules(commands, publishEvent, bus, (c) => resolveOtaConfig(c['ota']).download);
  const { detect, models, runtime } = platform;
  const workloads = workloadsModule(platform, { ...shared, publishEvent });
  // The board's samples, for /metrics and the dashboard with or without a broker; the fleet delivers them.
  const telemetry = createTelemetryModule({
    runtime: { slots: () => runtime.runtime()?.slotStats() ?? [] },
    workloads,
  });
  const { fleet, documents, ota } = fleetModules(platform, { ...shared, bus, telemetry });
  const { dashboard, dashboardFeeds, mdns } = localModules(
    platform,
    fleet,
    workloads,
    { ...shared, telemetry },
    (db) => new JobJournal(db),
  );

  let identity: AgentContext['identity'] | undefined;
  const reload = createReloader(config, {
    ...platform,
    documents,
    fleet,
    telemetry,
    workloads,
    identity: () => identity,
  });
  const settings = settingsModule(config, options.loaded, { platform, fleet, commands, reload, bus });
  const reloadFromDisk = registerReloadFromDisk(settings, reload, options.reloadConfig, commands);
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
