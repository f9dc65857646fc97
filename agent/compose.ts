import { createOtaModule } from '../ota/device.js';
import { ModelStoreInstaller } from '../ota/store-adapter.js';
import { LogTail } from './common/log-tail.js';
import type { AgentConfig } from './config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from './config/sections/slots.js';
import { createDashboardModule } from './dashboard/routes.js';
import { dashboardSourcesFrom } from './dashboard/sources.js';
import { createDetectModule } from './detect/module.js';
import type { Capabilities } from './detect/types.js';
import { createDocumentsModule, type DocumentsModule } from './documents/module.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule, type FleetModule } from './fleet/module.js';
import type { BoardInfo } from './fleet/protocol.js';
import { createSessionLimiter, type SessionLimiter } from './http/session-limits.js';
import { createMdnsModule } from './mdns/module.js';
import { createModelsModule, type InstalledModels } from './models/module.js';
import type { AgentModule, PublishEvent } from './module.js';
import { createRuntimeModule, type RuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import type { Runtime } from './runtime/runtime.js';
import { runtimeSlotStates } from './runtime/slot-states.js';
import { createWorkloadsModule, type WorkloadsModule } from './workloads/module.js';
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
        activation: runtimeActivationPort(rt, 'ota', {
          holdForRollback: (refs) => store.setRollbackHold(refs),
        }),
        probe: runtimeHealthProbe(rt),
      };
    },
  });
}

/** Handles a module needs from one composed after it (the fleet, the documents); filled in before any start. */
interface Later {
  fleet?: FleetModule;
  documents?: DocumentsModule;
}

/** What the board can do, which models it holds, what runs where: the modules every other one reads. */
function platformModules(commands: CommandRegistry, publishEvent: PublishEvent, later: Later) {
  const detect = createDetectModule({ commands });
  const models = createModelsModule({ commands, publishEvent });
  const runtime = createRuntimeModule({
    detected: detect,
    catalog: () => models.planCatalog(),
    inUse: (refs) => models.inUse(refs),
    installs: models.installs,
    commands,
    publishEvent,
    onPlacement: () => later.documents?.publishPlacement(),
    onSlotChange: () => later.documents?.publishPlacement(),
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
  workloads: WorkloadsModule,
  shared: { agentVersion: string; commands: CommandRegistry; logs: LogTail },
) {
  const { detect, models, runtime } = platform;
  const fleet = createFleetModule({
    agentVersion: shared.agentVersion,
    commands: shared.commands,
    logs: shared.logs,
    board: () => boardInfoOf(detect.capabilities()),
    workloads,
    runtime: { slots: () => runtime.runtime()?.slotStats() ?? [] },
    // Home Assistant gets sensors and a backend select for each placed slot; the choices are the usable backends.
    haSlots: () => {
      const backends =
        detect
          .capabilities()
          ?.backends.filter((b) => b.usable)
          .map((b) => b.backend) ?? [];
      return (runtime.runtime()?.slotStats() ?? []).map((s) => ({ name: s.slot, backends }));
    },
  });
  const documents = createDocumentsModule({
    agentVersion: shared.agentVersion,
    fleet: () => fleet.agent,
    capabilities: () => detect.capabilities(),
    store: () => models.models()?.store,
    placement: () => runtime.runtime()?.desired.placement(),
    slotStates: platform.slotStates,
    engine: platform.engine,
  });
  const ota = otaModule(runtime, () => models.models(), fleet);
  return { fleet, documents, ota };
}

/** The local network side: the dashboard (its pages and live feeds) and the mDNS announcement. */
function localModules(
  platform: Platform,
  fleet: FleetModule,
  workloads: WorkloadsModule,
  shared: { agentVersion: string; logs: LogTail; sessions: SessionLimiter },
) {
  const { detect, models, runtime } = platform;
  const dashboardParts = dashboardSourcesFrom({
    fleet: () => fleet.agent,
    fleetOff: () => fleet.offReason,
    runtime: () => runtime.runtime(),
    board: () => runtime.board(),
    engine: () => runtime.engineAvailability(),
    capabilities: () => detect.capabilities(),
    store: () => models.models()?.store,
    hubPulls: () => models.pulls(),
    planBoard: () => runtime.board(),
    workloads,
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

/** Re-read what can change without a restart: the board (live detection), slots, placement, documents. */
function reloader(config: AgentConfig, platform: Platform, documents: DocumentsModule) {
  return async (next: AgentConfig | undefined, reason: string): Promise<Record<string, unknown>> => {
    const { detect, runtime } = platform;
    const rt = runtime.runtime();
    const source = detect.reload(next ?? config);
    if (rt && next) await rt.configure(slotSpecsFromConfig(next['slots'] as SlotsConfig | undefined));
    const placement = rt ? await rt.replan(reason) : undefined;
    documents.publishAll();
    return {
      reloaded: true,
      config: next ? 'slots re-read' : 'unchanged',
      capabilities: source,
      ...(placement ? { revision: runtime.runtime()?.desired.revision().revision } : {}),
    };
  };
}

export function composeModules(config: AgentConfig, options: ComposeOptions) {
  const commands = new CommandRegistry();
  const logs = options.logs ?? new LogTail();
  const later: Later = {};
  // Watch-mode answers, placement changes and fallbacks go out on MQTT `events` once the fleet is connected.
  const publishEvent: PublishEvent = (type, data) => later.fleet?.agent?.publishEvent(type, data);
  // One limit for every live session: the dashboard's telemetry stream and the voice and vision sockets.
  const sessions = createSessionLimiter(config.http.maxSessions);
  const shared = { agentVersion: options.agentVersion, commands, logs, sessions };

  const platform = platformModules(commands, publishEvent, later);
  const { detect, models, runtime } = platform;
  const workloads = createWorkloadsModule({
    runtime: () => runtime.runtime(),
    slotStates: platform.slotStates,
    control: () => runtime.runtime(),
    sessions,
    publishEvent,
    commands,
    agentVersion: options.agentVersion,
  });
  const { fleet, documents, ota } = fleetModules(platform, workloads, shared);
  Object.assign(later, { fleet, documents });
  const { dashboard, dashboardFeeds, mdns } = localModules(platform, fleet, workloads, shared);

  const reload = reloader(config, platform, documents);
  commands.register({
    name: 'reload',
    summary: 're-read the configuration (slots), detect the board again and replan',
    timeoutMs: 60_000,
    handler: async () => reload(options.reloadConfig?.(), 'reload requested over MQTT'),
  });

  const services: AgentServices = {
    commands,
    logs,
    capabilities: () => detect.capabilities(),
    models: () => models.models(),
    fleet: () => fleet,
    workloads: () => workloads,
    runtime: () => runtime.runtime(),
    reload,
  };
  const modules: AgentModule[] = [
    detect,
    models,
    runtime,
    fleet,
    documents,
    ota,
    workloads,
    dashboard,
    dashboardFeeds,
    mdns,
  ];
  return { modules, services };
}
