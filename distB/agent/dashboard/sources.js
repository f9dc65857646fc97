import { modelsConfigOf } from '../../models/config.js';
import { JobJournal } from '../../ota/journal.js';
import { DEFAULT_CONTEXT, planPolicyFromConfig } from '../config/sections/slots.js';
import { RECOMMEND_ROLES } from '../plan/recommend.js';
import { placementPortFrom } from '../runtime/placement-port.js';
import { runtimeHealth } from '../runtime/slot-states.js';
import { brokerStatusFrom, engineStatusFrom, feedFromSnapshots, modelsPortFrom, otaPortFrom, SampleHub, telemetryPortFrom, } from './adapters.js';
import { hubPortFrom } from './hub-port.js';
const CONTEXT_TOKENS = Object.fromEntries(RECOMMEND_ROLES.map((r) => [r, DEFAULT_CONTEXT[r]]));
/** "Get models" over the models module's pulls, with the runtime's board, policy and probes to rank by. */
function hubSource(modules, ctx) {
    const pulls = modules.hubPulls?.();
    if (pulls === undefined)
        return {};
    return {
        hub: hubPortFrom({
            models: modelsConfigOf(ctx.config['models']),
            env: process.env,
            store: modules.store,
            pulls,
            recommendContext: () => {
                const board = modules.planBoard?.();
                const rt = modules.runtime();
                if (board === undefined || rt === undefined)
                    return undefined;
                return {
                    board,
                    policy: planPolicyFromConfig(ctx.config['runtime']),
                    probes: rt.probes.all(),
                    engineVersion: rt.engineVersion,
                    contextTokens: CONTEXT_TOKENS,
                };
            },
        }),
    };
}
export function dashboardSourcesFrom(modules) {
    const hub = new SampleHub();
    const feeds = [];
    const sources = (ctx) => {
        const agent = modules.fleet();
        const rt = modules.runtime();
        const store = modules.store();
        const broker = agent ? brokerStatusFrom(agent) : undefined;
        const off = modules.fleetOff?.();
        if (agent)
            feeds.push(feedFromSnapshots(hub, () => agent.telemetry?.latest()));
        if (broker)
            feeds.push(broker.dispose);
        return {
            capabilities: () => modules.capabilities(),
            engine: engineStatusFrom(() => modules.engine() ?? {
                available: false,
                reason: 'the runtime module has not probed the engine yet',
            }),
            ...(agent && broker ? { broker: broker.status, telemetry: telemetryPortFrom(agent.history, hub) } : {}),
            ...(off !== undefined ? { broker: () => ({ state: 'disabled', reason: off }) } : {}),
            ...(store ? { models: modelsPortFrom(store) } : {}),
            ...hubSource(modules, ctx),
            ...(rt
                ? {
                    placement: placementPortFrom(rt, modules.board ?? (() => undefined)),
                    health: () => runtimeHealth(rt),
                }
                : {}),
            ota: otaPortFrom(new JobJournal(ctx.db)),
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
            start() { },
            stop() {
                for (const dispose of feeds.splice(0))
                    dispose();
            },
        },
    };
}
//# sourceMappingURL=sources.js.map