import { createFleetAgent } from './agent.js';
import { CommandRegistry } from './commands.js';
export const FLEET_OFF_REASON = 'The fleet is off: no mqtt.url is set and mqtt.embeddedBroker.enabled is false, so this agent runs standalone';
export function createFleetModule(options) {
    const commands = options.commands ?? new CommandRegistry();
    let agent;
    let offReason;
    return {
        name: 'fleet',
        commands,
        get agent() {
            return agent;
        },
        get offReason() {
            return offReason;
        },
        async start(ctx) {
            const { config } = ctx;
            if (!config.mqtt.url && !config.mqtt.embeddedBroker.enabled) {
                offReason = FLEET_OFF_REASON;
                ctx.logger.warn(`${FLEET_OFF_REASON} (no telemetry, fleet commands or OTA jobs over MQTT)`);
                return;
            }
            agent = createFleetAgent({
                config: {
                    mqtt: config.mqtt,
                    ...(config['telemetry'] !== undefined
                        ? { telemetry: config['telemetry'] }
                        : {}),
                    root: config.root,
                    dataDir: config.dataDir,
                },
                db: ctx.db,
                logger: ctx.logger,
                deviceId: ctx.identity.deviceId,
                tags: ctx.identity.tags,
                board: options.board ?? (() => undefined),
                commands,
                clock: ctx.clock,
                agentVersion: options.agentVersion,
                ...(options.runtime ? { runtime: options.runtime } : {}),
                ...(options.workloads ? { workloads: options.workloads } : {}),
                ...(options.haSlots ? { haSlots: options.haSlots } : {}),
                ...(options.logs ? { logs: options.logs } : {}),
                ...(options.state ? { state: options.state } : {}),
            });
            await agent.start();
        },
        async stop() {
            await agent?.stop();
            agent = undefined;
        },
    };
}
//# sourceMappingURL=module.js.map