import type { LogTail } from '../../lib/log-tail.js';
import { brokerUrls } from '../config/sections/mqtt.js';
import type { SlotsConfig } from '../config/sections/slots.js';
import type { TelemetryConfigInput } from '../config/sections/telemetry.js';
import type { AgentBus, AgentContext, AgentModule } from '../module.js';
import type { BoardTelemetry } from '../telemetry/board.js';
import { createFleetAgent, type FleetAgent } from './agent.js';
import { CommandRegistry } from './commands.js';
import type { HaModelSlot, HaSlot } from './ha-discovery.js';
import type { BoardInfo } from './protocol.js';

// The fleet as an AgentModule for the composition root: identity, store, clock and config come from the
// AgentContext; what other modules contribute (commands, board info, runtime stats) is passed in here.

export interface FleetModuleOptions {
  agentVersion: string;
  /** Shared with the modules that register commands (detect, list-models, set-placement, …). */
  commands?: CommandRegistry;
  board?: () => BoardInfo | undefined;
  /** The agent's board telemetry (agent/telemetry/module.ts, started before the fleet), which the fleet
   *  delivers over MQTT; without it the fleet agent samples the board itself. */
  boardTelemetry?: () => BoardTelemetry | undefined;
  haSlots?: () => readonly HaSlot[];
  /** Home Assistant's model select per slot, for the slots as the settings run them (`settings.config` on the
   *  bus; the configuration the agent started with until the settings say). */
  haModelSlots?: (slots: SlotsConfig | undefined) => readonly HaModelSlot[];
  logs?: LogTail;
  state?: () => Record<string, unknown>;
  /** The agent's bus: the device events other modules emit go out on MQTT `events` while connected; the
   *  settings' configuration comes in. */
  bus?: AgentBus;
}

export interface FleetModule extends AgentModule {
  readonly commands: CommandRegistry;
  /** Present between start and stop, unless the fleet is off (`offReason`). */
  readonly agent: FleetAgent | undefined;
  /** Why the fleet is off: no broker is configured and the embedded one is disabled. */
  readonly offReason: string | undefined;
}

export const FLEET_OFF_REASON =
  'The fleet is off: no mqtt.url is set and mqtt.embeddedBroker.enabled is false, so this agent runs standalone';

export function createFleetModule(options: FleetModuleOptions): FleetModule {
  const commands = options.commands ?? new CommandRegistry();
  let agent: FleetAgent | undefined;
  let offReason: string | undefined;
  return {
    name: 'fleet',
    commands,
    get agent() {
      return agent;
    },
    get offReason() {
      return offReason;
    },
    async start(ctx: AgentContext) {
      const { haModelSlots } = options;
      const { config } = ctx;
      if (brokerUrls(config.mqtt).length === 0 && !config.mqtt.embeddedBroker.enabled) {
        offReason = FLEET_OFF_REASON;
        ctx.logger.warn(
          `${FLEET_OFF_REASON} (no telemetry, fleet commands or OTA jobs over MQTT; the board is still sampled for /metrics and the dashboard)`,
        );
        return;
      }
      let slots = config['slots'] as SlotsConfig | undefined;
      const boardTelemetry = options.boardTelemetry?.();
      agent = createFleetAgent({
        config: {
          mqtt: config.mqtt,
          ...(config['telemetry'] !== undefined
            ? { telemetry: config['telemetry'] as TelemetryConfigInput }
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
        ...(boardTelemetry ? { boardTelemetry } : {}),
        ...(options.haSlots ? { haSlots: options.haSlots } : {}),
        ...(haModelSlots ? { haModelSlots: () => haModelSlots(slots) } : {}),
        ...(options.logs ? { logs: options.logs } : {}),
        ...(options.state ? { state: options.state } : {}),
      });
      // From here on, as the agent's own publisher does (it keeps events while the link is down).
      options.bus?.on('fleet', 'device.event', (e) => agent?.publishEvent(e.type, e.data));
      options.bus?.on('fleet', 'settings.config', (e) => {
        slots = e.config['slots'] as SlotsConfig | undefined;
      });
      await agent.start();
    },
    async stop() {
      options.bus?.removeOwner('fleet');
      await agent?.stop();
      agent = undefined;
    },
  };
}
