import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/log.js';
import { LogTail } from '../../lib/log-tail.js';
import type { Db } from '../../lib/sqlite/database.js';
import { type DeviceTopics, type DocumentKind, deviceTopics } from '../../lib/topics.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import type { MqttConfig } from '../config/sections/mqtt.js';
import { resolveTelemetryConfig, type TelemetryConfigInput } from '../config/sections/telemetry.js';
import type { BoardTelemetry } from '../telemetry/board.js';
import type { TelemetryHistory } from '../telemetry/history.js';
import type { Outbox } from '../telemetry/outbox.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from '../telemetry/runtime-stats.js';
import type { Sampler } from '../telemetry/samplers.js';
import type { TelemetryService } from '../telemetry/service.js';
import { dispatchCommands } from './agent-commands.js';
import { AgentConnection } from './agent-connection.js';
import { EventPublisher, HomeAssistantAnnouncer, RetainedDocuments } from './agent-publishing.js';
import { createTelemetryPipeline } from './agent-telemetry.js';
import type { BrokerLinkStatus } from './broker-link.js';
import { registerBuiltinCommands } from './builtin-commands.js';
import { CommandRegistry } from './commands.js';
import { HA_STATUS_TOPIC, type HaModelSlot, type HaSlot } from './ha-discovery.js';
import { PresenceGuard } from './presence-guard.js';
import { type BoardInfo, encode } from './protocol.js';
import { type MessageHandler, type SubscriptionQos, SubscriptionRegistry } from './subscriptions.js';

// The agent's side of the MQTT contract: presence (status + Last Will), retained documents, commands with
// request/response, durable telemetry from the outbox, and Home Assistant discovery. Everything it needs is
// passed in; `start()` brings up the embedded broker when none is configured and returns without waiting for
// the broker: the BrokerLink connects in the background and keeps reconnecting with jittered backoff until
// `stop()`. Other modules subscribe through the agent (`subscribe`), whose registry restores every
// subscription after each connection. The parts: agent-connection.ts (broker, link, presence),
// agent-commands.ts (command dispatch), agent-publishing.ts (documents, events, Home Assistant),
// agent-telemetry.ts (outbox, drainer, samplers).

export interface FleetAgentConfig {
  mqtt: MqttConfig;
  telemetry?: TelemetryConfigInput;
  /** Filesystem root for samplers (`/` on a board). */
  root: string;
  /** The data directory, whose filesystem the disk sampler watches. */
  dataDir: string;
}

export interface FleetAgentDeps {
  config: FleetAgentConfig;
  db: Db;
  logger: Logger;
  deviceId: string;
  tags: readonly string[];
  board: () => BoardInfo | undefined;
  /** Shared with the modules that register their commands; a fresh one when omitted. */
  commands?: CommandRegistry;
  clock: Clock;
  agentVersion: string;
  /** The agent's board telemetry (agent/telemetry/module.ts), delivered over MQTT while the fleet runs; without
   *  it the fleet agent samples for itself. */
  boardTelemetry?: BoardTelemetry;
  /** When it samples for itself; defaults to the system samplers (CPU, memory, thermal zones, network, disk). */
  samplers?: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
  /** Extra fields for `get-state` (placement, slots…), merged over the fleet's own. */
  state?: () => Record<string, unknown>;
  /** Source of the `logs` command; pass the ring that the logger writes into. */
  logs?: LogTail;
  /** Slots and their `variant@backend` choices, for Home Assistant selects. */
  haSlots?: () => readonly HaSlot[];
  /** Home Assistant's model select per slot: its choices. */
  haModelSlots?: () => readonly HaModelSlot[];
  random?: () => number;
}

export interface FleetAgentEvents extends Record<string, unknown> {
  connected: { url: string; protocolVersion: 4 | 5 };
  disconnected: { reason: string };
}

export interface FleetAgent {
  readonly commands: CommandRegistry;
  readonly outbox: Outbox;
  readonly history: TelemetryHistory;
  readonly telemetry: TelemetryService | undefined;
  readonly events: TypedEventEmitter<FleetAgentEvents>;
  readonly connected: boolean;
  /** The broker in use, once started. */
  readonly brokerUrl: string | undefined;
  /** Every filter any module subscribed to, with its state on the current connection. */
  readonly subscriptions: SubscriptionRegistry;
  /** The connection's state, last error and next attempt; undefined before start. */
  linkStatus(): BrokerLinkStatus | undefined;
  /** Subscribes (now and after every reconnect) at `qos` (default 1) and routes the filters' messages to `handler`. */
  subscribe(
    filters: readonly string[],
    handler: MessageHandler,
    qos?: SubscriptionQos,
    refresh?: { everyMs: number },
  ): () => void;
  /** QoS 1 publish on the current connection; rejects while offline. */
  publish(topic: string, payload: string, opts: { qos: 1; retain: boolean }): Promise<void>;
  /** Runs `listener` after every (re)connection; returns the remover. */
  onConnected(listener: () => void): () => void;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Publishes a retained document (capabilities, placement, models); unchanged data is not republished. */
  setDocument(kind: DocumentKind, data: Record<string, unknown>): void;
  /** QoS 1 event; while offline the last 100 are kept in memory. */
  publishEvent(type: string, data?: Record<string, unknown>): void;
  announceHomeAssistant(): void;
  /** Publishes the retained online status again (its tags changed at run time). */
  refreshPresence(): void;
}

const DEFAULT_MAX_COMMAND_BYTES = 64 * 1024;

/** The agent's parts, built from its dependencies; createFleetAgent ties them to the connection's lifecycle. */
/** The device's own status topic, read back so a broker that dropped "online" gets it again (presence-guard.ts). */
function guardPresence(
  deviceId: string,
  topics: DeviceTopics,
  connection: AgentConnection,
  subscriptions: SubscriptionRegistry,
  log: Logger,
): PresenceGuard {
  const guard = new PresenceGuard({
    deviceId,
    publishOnline: () => (connection.connected ? announceOnline(connection, topics) : undefined),
    readRetained: () => subscriptions.resubscribe([topics.status]),
    logger: log.child('presence'),
  });
  subscriptions.add([topics.status], (_topic, payload, packet) => guard.onStatus(payload, packet), 0);
  return guard;
}

function buildParts(deps: FleetAgentDeps) {
  const { config, db, clock, deviceId } = deps;
  // The composition root already gives the module its 'fleet' namespace.
  const log = deps.logger;
  const topics = deviceTopics(deviceId);
  const subscriptions = new SubscriptionRegistry(log.child('subscriptions'));
  const connection = new AgentConnection({
    mqtt: config.mqtt,
    topics,
    presence: { deviceId, agentVersion: deps.agentVersion, tags: deps.tags, board: deps.board },
    subscriptions,
    clock,
    logger: log,
    random: deps.random ?? Math.random,
  });
  const homeAssistant = new HomeAssistantAnnouncer(
    {
      deviceId,
      agentVersion: deps.agentVersion,
      board: deps.board,
      ...(deps.haSlots ? { slots: deps.haSlots } : {}),
      ...(deps.haModelSlots ? { modelSlots: deps.haModelSlots } : {}),
      metricNames: () => Object.keys(pipeline.telemetry?.latest()?.metrics ?? {}),
    },
    connection,
  );
  const pipeline = createTelemetryPipeline({
    config: resolveTelemetryConfig(config.telemetry),
    db,
    deviceId,
    topic: topics.telemetry,
    connection,
    clock,
    logger: log,
    root: config.root,
    dataDir: config.dataDir,
    ...(deps.boardTelemetry ? { board: deps.boardTelemetry } : {}),
    ...(deps.samplers ? { samplers: deps.samplers } : {}),
    ...(deps.runtime ? { runtime: deps.runtime } : {}),
    ...(deps.workloads ? { workloads: deps.workloads } : {}),
    onSnapshot: () => homeAssistant.announceIfChanged(),
  });
  return {
    ...pipeline,
    topics,
    commands: deps.commands ?? new CommandRegistry(),
    events: new TypedEventEmitter<FleetAgentEvents>(),
    stopping: new AbortController(),
    subscriptions,
    connection,
    documents: new RetainedDocuments(deviceId, topics, connection, clock),
    presence: guardPresence(deviceId, topics, connection, subscriptions, log),
    eventPublisher: new EventPublisher(deviceId, topics, connection, clock),
    homeAssistant,
  };
}
type Parts = ReturnType<typeof buildParts>;

/** The built-in commands (ping, get-state, logs…), dispatch of every command, and HA's birth message. */
function serveCommands(deps: FleetAgentDeps, parts: Parts): void {
  const { commands, connection, subscriptions, documents, outbox, drainer, telemetry } = parts;
  registerBuiltinCommands(commands, {
    clock: deps.clock,
    agentVersion: deps.agentVersion,
    logs: deps.logs ?? new LogTail({ maxLines: 1 }),
    state: () => ({
      deviceId: deps.deviceId,
      status: connection.connected ? 'online' : 'offline',
      broker: connection.status(),
      subscriptions: subscriptions.state(),
      board: deps.board(),
      tags: [...deps.tags],
      documents: documents.snapshot(),
      outbox: outbox.stats(),
      drain: drainer.stats(),
      telemetry: telemetry?.latest(),
      ...deps.state?.(),
    }),
  });
  // QoS 0: discovery is announced on every connect anyway; a birth message missed offline changes nothing.
  subscriptions.add(
    [HA_STATUS_TOPIC],
    (_topic, payload) => {
      if (payload.toString('utf8').trim() === 'online') parts.homeAssistant.announce();
    },
    0,
  );
  dispatchCommands({
    commands,
    subscriptions,
    connection,
    topics: parts.topics,
    self: { deviceId: deps.deviceId, tags: deps.tags, board: deps.board },
    maxPayloadBytes: deps.config.mqtt.maxCommandBytes ?? DEFAULT_MAX_COMMAND_BYTES,
    clock: deps.clock,
    logger: deps.logger,
    signal: parts.stopping.signal,
    onConnected: (listener) => parts.events.on('connected', () => listener()),
  });
}

/** Publishes a fresh retained "online" status; its `ts` identifies it when the broker sends it back. */
function announceOnline(connection: AgentConnection, topics: DeviceTopics): number {
  const message = connection.statusMessage('online', true);
  connection.publishSafe(topics.status, encode('status', message), { qos: 1, retain: true });
  return message.ts ?? 0;
}

/** Every (re)connection: presence, the retained documents, what queued up offline, discovery, the outbox. */
function onConnect(parts: Parts, log: Logger) {
  const { connection, topics } = parts;
  return ({ url, protocolVersion }: { url: string; protocolVersion: 4 | 5 }) => {
    log.info('connected to broker', { url, protocolVersion });
    parts.presence.published(announceOnline(connection, topics));
    parts.documents.republishAll();
    parts.eventPublisher.flush();
    parts.homeAssistant.announce();
    parts.drainer.kick();
    parts.events.emit('connected', { url, protocolVersion });
  };
}

export function createFleetAgent(deps: FleetAgentDeps): FleetAgent {
  const parts = buildParts(deps);
  const { commands, outbox, history, telemetry, events, subscriptions, connection, stopping } = parts;
  serveCommands(deps, parts);
  return {
    commands,
    outbox,
    history,
    telemetry,
    events,
    get connected() {
      return connection.connected;
    },
    get brokerUrl() {
      return connection.link?.url;
    },
    subscriptions,
    linkStatus: () => connection.status(),
    subscribe: (filters, handler, qos, refresh) => subscriptions.add(filters, handler, qos, refresh),
    publish: (topic, payload, opts) => connection.publish(topic, payload, opts),
    onConnected: (listener) => events.on('connected', () => listener()),
    async start() {
      if (connection.link) return;
      const link = await connection.open();
      link.events.on('connected', onConnect(parts, deps.logger));
      link.events.on('disconnected', (e) => {
        parts.presence.disconnected();
        events.emit('disconnected', e);
      });
      link.start();
      parts.attach();
      if (parts.ownsSampling) telemetry?.start();
    },
    async stop() {
      if (stopping.signal.aborted) return;
      stopping.abort(new Error('fleet agent stopping'));
      // Before the clean "offline" goes out: the guard would answer it with "online" again.
      parts.presence.stop();
      parts.detach();
      if (parts.ownsSampling) telemetry?.stop();
      parts.drainer.stop();
      await connection.close();
      outbox.close();
      await connection.closeBroker();
    },
    setDocument: (kind, data) => parts.documents.set(kind, data),
    publishEvent: (type, data) => parts.eventPublisher.publish(type, data),
    announceHomeAssistant: () => parts.homeAssistant.announce(),
    refreshPresence: () => {
      if (parts.connection.connected)
        parts.presence.published(announceOnline(parts.connection, parts.topics));
    },
  };
}
