import { createOtaModule } from '../ota/device.js';
import { ModelStoreInstaller } from '../ota/store-adapter.js';
import { LogTail } from './common/log-tail.js';
import { slotSpecsFromConfig } from './config/sections/slots.js';
import { createDashboardModule } from './dashboard/routes.js';
import { dashboardSourcesFrom } from './dashboard/sources.js';
import { createDetectModule } from './detect/module.js';
import { createDocumentsModule } from './documents/module.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule } from './fleet/module.js';
import { createSessionLimiter } from './http/session-limits.js';
import { createMdnsModule } from './mdns/module.js';
import { createModelsModule } from './models/module.js';
import { createRuntimeModule } from './runtime/module.js';
import { runtimeActivationPort, runtimeHealthProbe } from './runtime/ota-ports.js';
import { runtimeSlotStates } from './runtime/slot-states.js';
import { createWorkloadsModule } from './workloads/module.js';
export { CAPABILITIES_CACHE_FILE, loadCapabilities } from './detect/module.js';
export { WORKLOAD_SLOTS } from './workloads/module.js';
export function boardInfoOf(caps) {
    if (!caps)
        return undefined;
    const info = { family: caps.soc.family.value ?? 'unknown' };
    if (caps.board.model.value)
        info.model = caps.board.model.value;
    if (caps.soc.name.value)
        info.soc = caps.soc.name.value;
    return info;
}
/** OTA's device ports over the running runtime and model store; undefined until both run. */
function otaModule(runtime, models, fleet) {
    return createOtaModule({
        transport: () => fleet.agent,
        store: () => {
            const m = models();
            if (!m)
                throw new Error('OTA started before the model store');
            return m.store;
        },
        ports: () => {
            const rt = runtime.runtime();
            const store = models()?.store;
            if (!rt || !store)
                return undefined;
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
/** What the board can do, which models it holds, what runs where: the modules every other one reads. */
function platformModules(commands, publishEvent, later) {
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
/** The MQTT side: the connection and commands, the retained documents, OTA jobs. */
function fleetModules(platform, workloads, shared) {
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
            const backends = detect
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
function localModules(platform, fleet, workloads, shared) {
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
    });
    return { dashboard, dashboardFeeds: dashboardParts.feeds, mdns };
}
/** Re-read what can change without a restart: the board (live detection), slots, placement, documents. */
function reloader(config, platform, documents) {
    return async (next, reason) => {
        const { detect, runtime } = platform;
        const rt = runtime.runtime();
        const source = detect.reload(next ?? config);
        if (rt && next)
            await rt.configure(slotSpecsFromConfig(next['slots']));
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
export function composeModules(config, options) {
    const commands = new CommandRegistry();
    const logs = options.logs ?? new LogTail();
    const later = {};
    // Watch-mode answers, placement changes and fallbacks go out on MQTT `events` once the fleet is connected.
    const publishEvent = (type, data) => later.fleet?.agent?.publishEvent(type, data);
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
    const services = {
        commands,
        logs,
        capabilities: () => detect.capabilities(),
        models: () => models.models(),
        fleet: () => fleet,
        workloads: () => workloads,
        runtime: () => runtime.runtime(),
        reload,
    };
    const modules = [
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
//# sourceMappingURL=compose.js.map