import { mkdirSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { matchProfile } from '../../board-support/index.js';
import { probeEngineInfo } from '../../engine/src/engine-info.js';
import { createEngineInfo, unavailableMessage } from '../../engine/src/index.js';
import { planPolicyFromConfig, slotSpecsFromConfig, } from '../config/sections/slots.js';
import { applyEngineBackends, detect } from '../detect/index.js';
import { boardFromCapabilities } from '../detect/plan-board.js';
import { engineBackendProbe, engineCompiledIn, engineProbes } from './backend-health.js';
import { engineHostFactory } from './engine-host-adapter.js';
import { EngineFailure } from './engine-port.js';
import { registerRuntimeCommands } from './fleet-commands.js';
import { GpuCacheStore } from './gpu-cache.js';
import { procSystemMemory } from './proc-memory.js';
import { registerRuntimeRoutes } from './routes.js';
import { Runtime } from './runtime.js';
/** The planner's board from detected capabilities, refined by the engine's compiled-in backends. */
function boardFromDetected(detected, engine) {
    let caps = detected.capabilities();
    if (!caps)
        throw new Error('the runtime started before detection');
    // The runtime's engine probe says which backends this MNN build has: the planner never picks one it
    // lacks, and the capability document says why ("MNN built without …").
    const compiled = engineCompiledIn(engine);
    if (compiled) {
        caps = applyEngineBackends(caps, compiled, engineProbes(engine));
        detected.update(caps);
    }
    // A root without /proc/meminfo (a capture of another board): the engine hosts run on this machine, so
    // its RAM is the budget that matters.
    return boardFromCapabilities(caps, matchProfile(caps), { ramBytes: totalmem() });
}
/** The runtime's events the fleet hears about, in the order the composition root always sent them. */
function relayEvents(rt, deps) {
    const publish = deps.publishEvent;
    const onSlotChange = deps.onSlotChange;
    if (onSlotChange)
        for (const ev of ['switch', 'step-failed', 'runner-error', 'fallback', 'recovered', 'host-exit'])
            rt.events.on(ev, () => onSlotChange());
    if (!publish && !deps.onPlacement)
        return;
    rt.events.on('placement', (e) => {
        deps.onPlacement?.();
        publish?.('runtime.placement', { revision: e.revision, reason: e.reason });
    });
    if (!publish)
        return;
    for (const ev of [
        'fallback',
        'recovered',
        'memory-released',
        'host-exit',
        'backend-health',
        'request-rescued',
    ])
        rt.events.on(ev, (data) => publish(`runtime.${ev}`, { ...data }));
}
/** Engine hosts that cannot start, for a device whose MNN is missing: every slot reports the same clear reason. */
export function unavailableHosts(reason) {
    return {
        engineVersion: 'unavailable',
        unavailableReason: reason,
        async start() {
            throw new EngineFailure('load', reason);
        },
    };
}
/** The board as detect sees it below `root`, planned with the matched profile's priors and thread advice. */
export function detectedBoard(root, engineBackends, probes = []) {
    let caps = detect({ root });
    if (engineBackends)
        caps = applyEngineBackends(caps, engineBackends, probes);
    const profile = matchProfile(caps);
    return boardFromCapabilities(caps, profile);
}
/** Engine hosts over the MNN the probe found, or hosts that refuse with its reason. */
function hostsFor(ctx, availability, cwd) {
    if (!availability.available) {
        const reason = unavailableMessage(availability.reason);
        ctx.logger.warn('engine unavailable: models will not load', { reason });
        return unavailableHosts(reason);
    }
    return engineHostFactory({
        engineVersion: availability.info.mnnVersion,
        log: ctx.logger,
        cwd,
        gpuCache: new GpuCacheStore(ctx.config.dataDir, ctx.logger),
    });
}
export function createRuntimeModule(deps) {
    let runtime;
    let availability;
    let lastBoard;
    let unroute = [];
    let unsubscribe;
    return {
        name: 'runtime',
        runtime: () => runtime,
        engineAvailability: () => availability,
        board: () => lastBoard,
        async start(ctx) {
            let hosts = deps.hosts;
            if (!hosts) {
                const cwd = join(ctx.config.dataDir, 'engine-tmp');
                mkdirSync(cwd, { recursive: true });
                const probed = await (deps.engineInfo ?? createEngineInfo({ logger: ctx.logger, cwd }))();
                availability = probed;
                hosts = hostsFor(ctx, probed, cwd);
            }
            let board;
            const planBoard = deps.board ??
                (deps.detected ? () => boardFromDetected(deps.detected, availability) : undefined) ??
                (() => (board ??= detectedBoard(ctx.config.root, engineCompiledIn(availability), engineProbes(availability))));
            const sources = {
                // The probe knows which backends this MNN build has: the planner never picks one it lacks.
                board: () => {
                    const b = planBoard();
                    if (b instanceof Promise)
                        return b.then((x) => (lastBoard = x));
                    lastBoard = b;
                    return b;
                },
                catalog: deps.catalog,
            };
            const cfg = ctx.config['runtime'];
            // With real engine hosts, a GPU backend that fails live is probed back in fresh hosts before use.
            const probeCwd = join(ctx.config.dataDir, 'engine-tmp');
            const backendHealth = !deps.hosts && availability?.available
                ? { probe: engineBackendProbe(() => probeEngineInfo({ logger: ctx.logger, cwd: probeCwd })) }
                : undefined;
            runtime = new Runtime({
                ...(backendHealth ? { backendHealth } : {}),
                db: ctx.db,
                clock: ctx.clock,
                log: ctx.logger,
                hosts,
                memory: deps.memory ?? procSystemMemory(ctx.config.root),
                sources,
                policy: planPolicyFromConfig(cfg),
                ...(deps.inUse ? { inUse: deps.inUse } : {}),
                options: {
                    ...(cfg?.drainTimeoutMs !== undefined ? { drainTimeoutMs: cfg.drainTimeoutMs } : {}),
                    ...(cfg?.swapReserveMiB !== undefined
                        ? { memoryReserveBytes: cfg.swapReserveMiB * 1024 * 1024 }
                        : {}),
                },
            });
            unroute = registerRuntimeRoutes(ctx, runtime);
            await runtime.configure(slotSpecsFromConfig(ctx.config['slots']));
            runtime.start();
            const rt = runtime;
            unsubscribe = deps.installs?.on('installed', (ref) => {
                void rt.replan(`model ${ref.id}@${ref.version} installed`).then(() => {
                    if (cfg?.probeAfterInstall !== false)
                        rt.probeInBackground({ modelId: ref.id, version: ref.version });
                }, (err) => ctx.logger.warn('replan after install failed', { error: String(err) }));
            });
            if (deps.commands)
                registerRuntimeCommands(deps.commands, rt);
            relayEvents(rt, deps);
            deps.onStarted?.(runtime);
        },
        async stop() {
            unsubscribe?.();
            unsubscribe = undefined;
            for (const off of unroute)
                off();
            unroute = [];
            await runtime?.stop();
        },
    };
}
//# sourceMappingURL=module.js.map