import { connect, type IClientPublishOptions, type MqttClient } from 'mqtt';
import type { Clock } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { LogTail } from '../common/log-tail.js';
import { TypedEventEmitter } from '../common/typed-events.js';
import type { MqttConfig } from '../config/sections/mqtt.js';
import {
  defaultTelemetryConfig,
  type TelemetryConfig,
  type TelemetryConfigInput,
} from '../config/sections/telemetry.js';
import type { Db } from '../store/database.js';
import { OutboxDrainer, type QosPublisher } from '../telemetry/drain.js';
import { TelemetryHistory } from '../telemetry/history.js';
import { Outbox } from '../telemetry/outbox.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from '../telemetry/runtime-stats.js';
import { defaultSamplers, type Sampler } from '../telemetry/samplers.js';
import { TelemetryService, type TelemetrySnapshot } from '../telemetry/service.js';
import { chooseBroker, outboxPublisher, Publications, sayGoodbye } from './agent-parts.js';
import { registerBuiltinCommands } from './builtin-commands.js';
import { CommandServer } from './command-server.js';
import { CommandRegistry } from './commands.js';
import { backoffDelay, buildClientOptions, DEFAULT_RECONNECT } from './connection.js';
import type { EmbeddedBroker } from './embedded-broker.js';
import { buildHaDiscovery, HA_STATUS_TOPIC, type HaSlot, haDiscoveryTopic } from './ha-discovery.js';
import { type BoardInfo, encode, PROTOCOL_VERSION, type StatusMessage } from './protocol.js';
import { type DocumentKind, deviceTopics, fleetTopics } from './topics.js';

// The agent's side of the MQTT contract: presence (status + Last Will), retained documents, commands with
// request/response, durable telemetry from the outbox, and Home Assistant discovery. Everything it needs is
// passed in; `start()` connects (bringing up an embedded broker when none is configured) and keeps
// reconnecting with jittered backoff until `stop()`.

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
  /** Defaults to the system samplers (CPU, memory, thermal zones, network, disk). */
  samplers?: readonly Sampler[];
  runtime?: RuntimeStatsProvider;
  workloads?: WorkloadMetricsProvider;
  /** Extra fields for `get-state` (placement, slots…), merged over the fleet's own. */
  state?: () => Record<string, unknown>;
  /** Source of the `logs` command; pass the ring that the logger writes into. */
  logs?: LogTail;
  /** Slots and their `variant@backend` choices, for Home Assistant selects. */
  haSlots?: () => readonly HaSlot[];
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
  /** The MQTT client, for modules with topics of their own (OTA); undefined before start. */
  readonly client: MqttClient | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Publishes a retained document (capabilities, placement, models); unchanged data is not republished. */
  setDocument(kind: DocumentKind, data: Record<string, unknown>): void;
  /** QoS 1 event; while offline the last 100 are kept in memory. */
  publishEvent(type: string, data?: Record<string, unknown>): void;
  announceHomeAssistant(): void;
}

const DEFAULT_MAX_COMMAND_BYTES = 64 * 1024;

export function resolveTelemetryConfig(partial: TelemetryConfigInput | undefined): TelemetryConfig {
  const d = defaultTelemetryConfig;
  return {
    ...d,
    ...partial,
    outbox: { ...d.outbox, ...partial?.outbox },
    history: { ...d.history, ...partial?.history },
  };
}

function createTelemetry(
  deps: FleetAgentDeps,
  telemetryConfig: TelemetryConfig,
  parts: { outbox: Outbox; history: TelemetryHistory; log: Logger },
  onSnapshot: (s: TelemetrySnapshot) => void,
): TelemetryService | undefined {
  if (!telemetryConfig.enabled) return undefined;
  const { config, clock } = deps;
  return new TelemetryService({
    deviceId: deps.deviceId,
    topic: deviceTopics(deps.deviceId).telemetry,
    config: telemetryConfig,
    db: deps.db,
    outbox: parts.outbox,
    history: parts.history,
    samplers:
      deps.samplers ??
      defaultSamplers({ root: config.root, dataDir: config.dataDir, monotonicMs: clock.monotonicMs }),
    ...(deps.runtime ? { runtime: deps.runtime } : {}),
    ...(deps.workloads ? { workloads: deps.workloads } : {}),
    clock,
    logger: parts.log.child('telemetry'),
    onSnapshot,
  });
}

/** Home Assistant's discovery document for this device, and the temperature sensors it announces. */
function haDiscoveryOf(
  deps: FleetAgentDeps,
  telemetry: TelemetryService | undefined,
): { payload: string; temps: string } {
  const board = deps.board();
  const tempMetrics = Object.keys(telemetry?.latest()?.metrics ?? {}).filter((m) => m.startsWith('temp.'));
  const discovery = buildHaDiscovery({
    deviceId: deps.deviceId,
    agentVersion: deps.agentVersion,
    ...(board?.model ? { model: board.model } : {}),
    ...(board?.soc ? { hwVersion: board.soc } : {}),
    temperatureMetrics: tempMetrics,
    slots: deps.haSlots?.() ?? [],
  });
  return { payload: JSON.stringify(discovery), temps: tempMetrics.join(',') };
}

function statusOf(
  deps: FleetAgentDeps,
  state: 'online' | 'offline',
  ts: number | undefined,
  mqtt: 4 | 5,
): StatusMessage {
  const board = deps.board();
  return {
    v: PROTOCOL_VERSION,
    state,
    deviceId: deps.deviceId,
    ...(ts !== undefined ? { ts } : {}),
    agentVersion: deps.agentVersion,
    ...(board ? { board } : {}),
    tags: [...deps.tags],
    mqtt,
  };
}

function commandServerFor(
  deps: FleetAgentDeps,
  commands: CommandRegistry,
  log: Logger,
  signal: AbortSignal,
): CommandServer {
  return new CommandServer({
    registry: commands,
    self: {
      deviceId: deps.deviceId,
      tags: deps.tags,
      get boardFamily() {
        return deps.board()?.family;
      },
    },
    maxPayloadBytes: deps.config.mqtt.maxCommandBytes ?? DEFAULT_MAX_COMMAND_BYTES,
    clock: deps.clock,
    logger: log.child('cmd'),
    signal,
  });
}

function subscribeCommands(c: MqttClient, topics: ReturnType<typeof deviceTopics>, log: Logger): void {
  c.subscribe(
    {
      [topics.commandFilter]: { qos: 1 },
      [fleetTopics.commandFilter]: { qos: 1 },
      [HA_STATUS_TOPIC]: { qos: 1 },
    },
    (err) => {
      if (err) log.warn('subscribe failed', { error: errorMessage(err) });
    },
  );
}

/** Incoming MQTT messages: Home Assistant coming online, else a command for the command server. */
function commandMessages(link: {
  server: CommandServer;
  v5: () => boolean;
  publishSafe: (topic: string, payload: string, opts: IClientPublishOptions) => void;
  announce: () => void;
  log: Logger;
}) {
  const { server, v5, publishSafe, log } = link;
  return (
    topic: string,
    payload: Buffer,
    packet: { properties?: { responseTopic?: string; correlationData?: Buffer } },
  ) => {
    if (topic === HA_STATUS_TOPIC) {
      if (payload.toString('utf8').trim() === 'online') link.announce();
      return;
    }
    const props = packet.properties ?? {};
    server
      .handle({
        topic,
        payload,
        ...(props.responseTopic !== undefined ? { responseTopic: props.responseTopic } : {}),
        ...(props.correlationData !== undefined ? { correlationData: props.correlationData } : {}),
      })
      .then((out) => {
        if (out === undefined) return;
        const opts: IClientPublishOptions = { qos: 1 };
        if (v5() && out.correlationData) opts.properties = { correlationData: out.correlationData };
        publishSafe(out.topic, out.payload, opts);
      })
      .catch((err: unknown) => log.error('command handling crashed', { topic, error: errorMessage(err) }));
  };
}

/** The fleet's part of `get-state`, with the modules' own fields merged over it. */
function fleetState(
  deps: FleetAgentDeps,
  now: {
    connected: boolean;
    broker: string | undefined;
    documents: Publications['documents'];
    outbox: Outbox;
    drainer: OutboxDrainer;
    telemetry: TelemetryService | undefined;
  },
): Record<string, unknown> {
  return {
    deviceId: deps.deviceId,
    status: now.connected ? 'online' : 'offline',
    broker: now.broker,
    board: deps.board(),
    tags: [...deps.tags],
    documents: Object.fromEntries([...now.documents].map(([k, d]) => [k, JSON.parse(d.json)])),
    outbox: now.outbox.stats(),
    drain: now.drainer.stats(),
    telemetry: now.telemetry?.latest(),
    ...deps.state?.(),
  };
}

function drainerFor(
  outbox: Outbox,
  publisher: QosPublisher,
  telemetryConfig: TelemetryConfig,
  clock: Clock,
  log: Logger,
): OutboxDrainer {
  return new OutboxDrainer({
    outbox,
    publisher,
    maxInflight: telemetryConfig.outbox.maxInflight,
    ratePerSec: telemetryConfig.outbox.drainRatePerSec,
    clock,
    logger: log.child('drain'),
  });
}

export function createFleetAgent(deps: FleetAgentDeps): FleetAgent {
  const { config, db, clock, deviceId } = deps;
  // The composition root already gives the module its 'fleet' namespace.
  const log = deps.logger;
  const topics = deviceTopics(deviceId);
  const telemetryConfig = resolveTelemetryConfig(config.telemetry);
  const commands = deps.commands ?? new CommandRegistry();
  const events = new TypedEventEmitter<FleetAgentEvents>();
  const outbox = new Outbox({ db, config: telemetryConfig.outbox, clock, logger: log.child('outbox') });
  const history = new TelemetryHistory(db, telemetryConfig.history, clock);
  const random = deps.random ?? Math.random;
  const stopping = new AbortController();

  let client: MqttClient | undefined;
  let broker: EmbeddedBroker | undefined;
  let target: { url: string; protocolVersion: 4 | 5 } | undefined;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let announcedTemps = '';

  const isConnected = () => client?.connected === true;
  const v5 = () => target?.protocolVersion === 5;

  const publisher = outboxPublisher({ client: () => client, v5, telemetryTopic: topics.telemetry, clock });
  const drainer = drainerFor(outbox, publisher, telemetryConfig, clock, log);

  const telemetry = createTelemetry(deps, telemetryConfig, { outbox, history, log }, (s) => {
    // Thermal zones are known only once sampled: announce again when the set of sensors changes.
    const temps = Object.keys(s.metrics)
      .filter((m) => m.startsWith('temp.'))
      .join(',');
    if (temps !== announcedTemps && isConnected()) announceHomeAssistant();
  });

  const statusMessage = (state: 'online' | 'offline', withTs: boolean): StatusMessage =>
    statusOf(
      deps,
      state,
      withTs ? clock.nowMs() : undefined,
      target?.protocolVersion ?? config.mqtt.protocolVersion,
    );

  registerBuiltinCommands(commands, {
    clock,
    agentVersion: deps.agentVersion,
    logs: deps.logs ?? new LogTail({ maxLines: 1 }),
    state: () =>
      fleetState(deps, {
        connected: isConnected(),
        broker: target?.url,
        documents: publications.documents,
        outbox,
        drainer,
        telemetry,
      }),
  });

  const server = commandServerFor(deps, commands, log, stopping.signal);

  const publishSafe = (topic: string, payload: string, opts: IClientPublishOptions) => {
    if (!isConnected()) return;
    client!.publish(topic, payload, opts, (err) => {
      if (err) log.debug('publish failed', { topic, error: errorMessage(err) });
    });
  };

  const publications = new Publications({
    deviceId,
    clock,
    topics,
    connected: isConnected,
    publish: publishSafe,
  });

  const announceHomeAssistant = () => {
    const discovery = haDiscoveryOf(deps, telemetry);
    announcedTemps = discovery.temps;
    publishSafe(haDiscoveryTopic(deviceId), discovery.payload, { qos: 1, retain: true });
  };

  const onConnect = () => {
    attempt = 0;
    const c = client!;
    log.info('connected to broker', { url: target?.url, protocolVersion: target?.protocolVersion });
    publishSafe(topics.status, encode('status', statusMessage('online', true)), { qos: 1, retain: true });
    subscribeCommands(c, topics, log);
    publications.flush();
    announceHomeAssistant();
    drainer.kick();
    events.emit('connected', { url: target!.url, protocolVersion: target!.protocolVersion });
  };

  const onMessage = commandMessages({
    server,
    v5,
    publishSafe,
    announce: () => announceHomeAssistant(),
    log,
  });

  const scheduleReconnect = (reason: string) => {
    if (stopping.signal.aborted || reconnectTimer !== undefined || client === undefined) return;
    const delay = backoffDelay(attempt++, config.mqtt.reconnect ?? DEFAULT_RECONNECT, random);
    log.info('disconnected; reconnecting', { reason, inMs: delay, attempt });
    events.emit('disconnected', { reason });
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      if (!stopping.signal.aborted && client && !client.connected) client.reconnect();
    }, delay);
  };

  let lastError = 'connection closed';
  return {
    commands,
    outbox,
    history,
    telemetry,
    events,
    get connected() {
      return isConnected();
    },
    get brokerUrl() {
      return target?.url;
    },
    get client() {
      return client;
    },
    async start() {
      if (client) return;
      const chosen = await chooseBroker(config.mqtt, log);
      target = chosen.target;
      broker = chosen.broker;
      const will = { topic: topics.status, payload: encode('status', statusMessage('offline', false)) };
      const options = buildClientOptions(config.mqtt, target, `mnn-edge-${deviceId}`, will);
      client = connect(target.url, options);
      client.on('connect', onConnect);
      client.on('message', onMessage);
      client.on('error', (err) => {
        lastError = errorMessage(err);
        log.debug('mqtt error', { error: lastError });
      });
      client.on('close', () => {
        scheduleReconnect(lastError);
        lastError = 'connection closed';
      });
      telemetry?.start();
    },
    async stop() {
      if (stopping.signal.aborted) return;
      stopping.abort(new Error('fleet agent stopping'));
      telemetry?.stop();
      drainer.stop();
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      if (client)
        await sayGoodbye(client, topics.status, () => encode('status', statusMessage('offline', true)));
      outbox.close();
      await broker?.close();
    },
    setDocument: (kind, data) => publications.setDocument(kind, data),
    publishEvent: (type, data) => publications.publishEvent(type, data),
    announceHomeAssistant,
  };
}
