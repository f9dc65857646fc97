import type { IClientPublishOptions } from 'mqtt';
import type { Clock } from '../common/clock.js';
import { errorMessage, MnnEdgeError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { LogTail } from '../common/log-tail.js';
import { TypedEventEmitter } from '../common/typed-events.js';
import type { MqttConfig } from '../config/sections/mqtt.js';
import {
  defaultTelemetryConfig,
  type TelemetryConfig,
  type TelemetryConfigInput,
} from '../config/sections/telemetry.js';
import type { Db } from '../store/sqlite/database.js';
import { OutboxDrainer, type QosPublisher } from '../telemetry/drain.js';
import { TelemetryHistory } from '../telemetry/history.js';
import { Outbox, type OutboxMessage } from '../telemetry/outbox.js';
import type { RuntimeStatsProvider, WorkloadMetricsProvider } from '../telemetry/runtime-stats.js';
import { defaultSamplers, type Sampler } from '../telemetry/samplers.js';
import { TelemetryService } from '../telemetry/service.js';
import { BrokerLink, type BrokerLinkStatus } from './broker-link.js';
import { registerBuiltinCommands } from './builtin-commands.js';
import { CommandServer } from './command-server.js';
import { CommandRegistry } from './commands.js';
import { type EmbeddedBroker, startEmbeddedBroker } from './embedded-broker.js';
import {
  buildHaDiscovery,
  HA_STATUS_TOPIC,
  type HaDeviceConfig,
  type HaSlot,
  haDiscoveryTopic,
  haRemovals,
} from './ha-discovery.js';
import {
  type BoardInfo,
  type DocumentMessage,
  type EventMessage,
  encode,
  PROTOCOL_VERSION,
  type StatusMessage,
} from './protocol.js';
import { type MessageHandler, SubscriptionRegistry } from './subscriptions.js';
import { type DocumentKind, deviceTopics, fleetTopics } from './topics.js';

// The agent's side of the MQTT contract: presence (status + Last Will), retained documents, commands with
// request/response, durable telemetry from the outbox, and Home Assistant discovery. Everything it needs is
// passed in; `start()` brings up the embedded broker when none is configured and returns without waiting for
// the broker: the BrokerLink connects in the background and keeps reconnecting with jittered backoff until
// `stop()`. Other modules subscribe through the agent (`subscribe`), whose registry restores every
// subscription after each connection.

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
  /** Every filter any module subscribed to, with its state on the current connection. */
  readonly subscriptions: SubscriptionRegistry;
  /** The connection's state, last error and next attempt; undefined before start. */
  linkStatus(): BrokerLinkStatus | undefined;
  /** Subscribes (now and after every reconnect) and routes the filters' messages to `handler`. */
  subscribe(filters: readonly string[], handler: MessageHandler): () => void;
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
}

const DEFAULT_MAX_COMMAND_BYTES = 64 * 1024;
const MAX_QUEUED_EVENTS = 100;

export function resolveTelemetryConfig(partial: TelemetryConfigInput | undefined): TelemetryConfig {
  const d = defaultTelemetryConfig;
  return {
    ...d,
    ...partial,
    outbox: { ...d.outbox, ...partial?.outbox },
    history: { ...d.history, ...partial?.history },
  };
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

  const subscriptions = new SubscriptionRegistry(log.child('subscriptions'));
  let link: BrokerLink | undefined;
  let broker: EmbeddedBroker | undefined;
  const documents = new Map<DocumentKind, { json: string; ts: number }>();
  const queuedEvents: EventMessage[] = [];
  // What Home Assistant was last told: the config (to remove entities that went away) and its shape.
  let announced: HaDeviceConfig | undefined;
  let announcedShape = '';
  const haInput = () => {
    const tempMetrics = Object.keys(telemetry?.latest()?.metrics ?? {}).filter((m) => m.startsWith('temp.'));
    const slots = deps.haSlots?.() ?? [];
    const shape = `${tempMetrics.join(',')}|${slots.map((x) => `${x.name}:${x.backends.join('/')}`).join(',')}`;
    return { tempMetrics, slots, shape };
  };

  const isConnected = () => link?.connected === true;
  const v5 = () => link?.protocolVersion === 5;

  const publisher: QosPublisher = {
    get connected() {
      return isConnected();
    },
    publish(m: OutboxMessage, done) {
      if (link === undefined) return done(new Error('not connected'));
      // Telemetry is also retained, so a new subscriber (`fleet ls`) sees the latest at once. Brokers set the
      // retain flag only on that on-subscribe copy, never on live forwards: sequence counters skip it.
      const opts: IClientPublishOptions = { qos: 1, retain: m.topic === topics.telemetry };
      if (v5()) {
        // The drainer never hands over an expired message, so at least one second remains.
        opts.properties = {
          messageExpiryInterval: Math.max(1, Math.ceil((m.expiresAt - clock.nowMs()) / 1000)),
        };
      }
      link.publish(m.topic, m.payload, opts, done);
    },
  };
  const drainer = new OutboxDrainer({
    outbox,
    publisher,
    maxInflight: telemetryConfig.outbox.maxInflight,
    ratePerSec: telemetryConfig.outbox.drainRatePerSec,
    clock,
    logger: log.child('drain'),
  });

  const telemetry = telemetryConfig.enabled
    ? new TelemetryService({
        deviceId,
        topic: topics.telemetry,
        config: telemetryConfig,
        db,
        outbox,
        history,
        samplers:
          deps.samplers ??
          defaultSamplers({ root: config.root, dataDir: config.dataDir, monotonicMs: clock.monotonicMs }),
        ...(deps.runtime ? { runtime: deps.runtime } : {}),
        ...(deps.workloads ? { workloads: deps.workloads } : {}),
        clock,
        logger: log.child('telemetry'),
        onSnapshot: () => {
          // Thermal zones are known only once sampled, slots come and go with the placement: announce again
          // when the set of entities changes.
          if (haInput().shape !== announcedShape && isConnected()) announceHomeAssistant();
        },
      })
    : undefined;

  const statusMessage = (
    state: 'online' | 'offline',
    withTs: boolean,
    protocolVersion: 4 | 5 = link?.protocolVersion ?? 5,
  ): StatusMessage => {
    const board = deps.board();
    return {
      v: PROTOCOL_VERSION,
      state,
      deviceId,
      ...(withTs ? { ts: clock.nowMs() } : {}),
      agentVersion: deps.agentVersion,
      ...(board ? { board } : {}),
      tags: [...deps.tags],
      mqtt: protocolVersion,
    };
  };

  const logs = deps.logs ?? new LogTail({ maxLines: 1 });
  registerBuiltinCommands(commands, {
    clock,
    agentVersion: deps.agentVersion,
    logs,
    state: () => ({
      deviceId,
      status: isConnected() ? 'online' : 'offline',
      broker: link?.status(),
      subscriptions: subscriptions.state(),
      board: deps.board(),
      tags: [...deps.tags],
      documents: Object.fromEntries([...documents].map(([k, d]) => [k, JSON.parse(d.json)])),
      outbox: outbox.stats(),
      drain: drainer.stats(),
      telemetry: telemetry?.latest(),
      ...deps.state?.(),
    }),
  });

  const server = new CommandServer({
    registry: commands,
    self: {
      deviceId,
      tags: deps.tags,
      get boardFamily() {
        return deps.board()?.family;
      },
    },
    maxPayloadBytes: config.mqtt.maxCommandBytes ?? DEFAULT_MAX_COMMAND_BYTES,
    clock,
    logger: log.child('cmd'),
    signal: stopping.signal,
  });

  const publishSafe = (topic: string, payload: string, opts: IClientPublishOptions) => {
    link?.publish(topic, payload, opts, (err) => {
      if (err) log.debug('publish failed', { topic, error: errorMessage(err) });
    });
  };

  const publishSafeOrFail = (
    topic: string,
    payload: string,
    opts: IClientPublishOptions,
    done: (err: Error | undefined) => void,
  ) => {
    if (!link) return done(new Error('the fleet agent has not started'));
    link.publish(topic, payload, opts, done);
  };

  const publishDocument = (kind: DocumentKind) => {
    const doc = documents.get(kind);
    if (!doc) return;
    publishSafe(topics.document(kind), doc.json, { qos: 1, retain: true });
  };

  const announceHomeAssistant = () => {
    if (!isConnected()) return;
    const board = deps.board();
    const { tempMetrics, slots, shape } = haInput();
    const discovery = buildHaDiscovery({
      deviceId,
      agentVersion: deps.agentVersion,
      ...(board?.model ? { model: board.model } : {}),
      ...(board?.soc ? { hwVersion: board.soc } : {}),
      temperatureMetrics: tempMetrics,
      slots,
    });
    const payload = { ...discovery, cmps: { ...discovery.cmps, ...haRemovals(announced, discovery) } };
    announced = discovery;
    announcedShape = shape;
    publishSafe(haDiscoveryTopic(deviceId), JSON.stringify(payload), { qos: 1, retain: true });
  };

  const onConnect = ({ url, protocolVersion }: { url: string; protocolVersion: 4 | 5 }) => {
    log.info('connected to broker', { url, protocolVersion });
    publishSafe(topics.status, encode('status', statusMessage('online', true)), { qos: 1, retain: true });
    for (const kind of documents.keys()) publishDocument(kind);
    for (const e of queuedEvents.splice(0)) publishSafe(topics.events, encode('event', e), { qos: 1 });
    announceHomeAssistant();
    drainer.kick();
    events.emit('connected', { url, protocolVersion });
  };

  subscriptions.add([HA_STATUS_TOPIC], (_topic, payload) => {
    if (payload.toString('utf8').trim() === 'online') announceHomeAssistant();
  });
  const onCommand: MessageHandler = (topic, payload, packet) => {
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
  subscriptions.add([topics.commandFilter, fleetTopics.commandFilter], onCommand);

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
      return link?.url;
    },
    subscriptions,
    linkStatus: () => link?.status(),
    subscribe: (filters, handler) => subscriptions.add(filters, handler),
    publish: (topic, payload, opts) =>
      new Promise<void>((resolve, reject) =>
        publishSafeOrFail(topic, payload, opts, (err) => (err ? reject(err) : resolve())),
      ),
    onConnected: (listener) => events.on('connected', () => listener()),
    async start() {
      if (link) return;
      let url: string;
      let protocol = config.mqtt.protocolVersion;
      if (config.mqtt.url) {
        url = config.mqtt.url;
      } else if (config.mqtt.embeddedBroker.enabled) {
        try {
          broker = await startEmbeddedBroker({
            host: config.mqtt.embeddedBroker.host,
            port: config.mqtt.embeddedBroker.port,
            logger: log.child('broker'),
          });
          // aedes speaks MQTT 3.1.1 only; the contract's payload fields stand in for the MQTT 5 properties.
          url = broker.url;
          protocol = 4;
        } catch (err) {
          // Something already listens on the local broker port — on a developer's machine usually Debian's
          // mosquitto. Use it rather than refuse to start; the fleet CLI finds the agent there too.
          if (!(err instanceof MnnEdgeError && err.details?.['errno'] === 'EADDRINUSE')) throw err;
          const { host, port } = config.mqtt.embeddedBroker;
          url = `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}`;
          log.warn('the embedded broker port is taken; using the broker already listening there', { url });
        }
      } else {
        throw new MnnEdgeError('ECONFIG', 'No MQTT broker: set mqtt.url or enable mqtt.embeddedBroker');
      }
      link = new BrokerLink({
        url,
        config: config.mqtt,
        protocol,
        clientId: `mnn-edge-${topics.segment}`,
        will: (level) => ({
          topic: topics.status,
          payload: encode('status', statusMessage('offline', false, level)),
        }),
        subscriptions,
        logger: log.child('link'),
        now: () => clock.nowMs(),
        random,
      });
      link.events.on('connected', onConnect);
      link.events.on('disconnected', (e) => events.emit('disconnected', e));
      link.start();
      telemetry?.start();
    },
    async stop() {
      if (stopping.signal.aborted) return;
      stopping.abort(new Error('fleet agent stopping'));
      telemetry?.stop();
      drainer.stop();
      // A clean stop says so itself: the broker discards the Last Will on a normal DISCONNECT.
      await link?.stop(
        (c) =>
          new Promise<void>((resolve) => {
            const giveUp = setTimeout(resolve, 2_000);
            c.publish(
              topics.status,
              encode('status', statusMessage('offline', true)),
              { qos: 1, retain: true },
              () => {
                clearTimeout(giveUp);
                resolve();
              },
            );
          }),
      );
      outbox.close();
      await broker?.close();
    },
    setDocument(kind, data) {
      const json = encode('document', {
        v: PROTOCOL_VERSION,
        deviceId,
        ts: clock.nowMs(),
        data,
      } satisfies DocumentMessage);
      const same = documents.get(kind);
      if (same && JSON.stringify(JSON.parse(same.json).data) === JSON.stringify(data)) return;
      documents.set(kind, { json, ts: clock.nowMs() });
      publishDocument(kind);
    },
    publishEvent(type, data) {
      const e: EventMessage = {
        v: PROTOCOL_VERSION,
        deviceId,
        ts: clock.nowMs(),
        type,
        ...(data ? { data } : {}),
      };
      const payload = encode('event', e);
      if (isConnected()) publishSafe(topics.events, payload, { qos: 1 });
      else {
        queuedEvents.push(e);
        if (queuedEvents.length > MAX_QUEUED_EVENTS) queuedEvents.shift();
      }
    },
    announceHomeAssistant,
  };
}
