import { LogTail } from '../common/log-tail.js';
import { TypedEventEmitter } from '../common/typed-events.js';
import { defaultTelemetryConfig, } from '../config/sections/telemetry.js';
import { dispatchCommands } from './agent-commands.js';
import { AgentConnection } from './agent-connection.js';
import { EventPublisher, HomeAssistantAnnouncer, RetainedDocuments } from './agent-publishing.js';
import { createTelemetryPipeline } from './agent-telemetry.js';
import { registerBuiltinCommands } from './builtin-commands.js';
import { CommandRegistry } from './commands.js';
import { HA_STATUS_TOPIC } from './ha-discovery.js';
import { encode } from './protocol.js';
import { SubscriptionRegistry } from './subscriptions.js';
import { deviceTopics } from './topics.js';
const DEFAULT_MAX_COMMAND_BYTES = 64 * 1024;
export function resolveTelemetryConfig(partial) {
    const d = defaultTelemetryConfig;
    return {
        ...d,
        ...partial,
        outbox: { ...d.outbox, ...partial?.outbox },
        history: { ...d.history, ...partial?.history },
    };
}
/** The agent's parts, built from its dependencies; createFleetAgent ties them to the connection's lifecycle. */
function buildParts(deps) {
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
    const homeAssistant = new HomeAssistantAnnouncer({
        deviceId,
        agentVersion: deps.agentVersion,
        board: deps.board,
        ...(deps.haSlots ? { slots: deps.haSlots } : {}),
        metricNames: () => Object.keys(pipeline.telemetry?.latest()?.metrics ?? {}),
    }, connection);
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
        ...(deps.samplers ? { samplers: deps.samplers } : {}),
        ...(deps.runtime ? { runtime: deps.runtime } : {}),
        ...(deps.workloads ? { workloads: deps.workloads } : {}),
        onSnapshot: () => homeAssistant.announceIfChanged(),
    });
    return {
        ...pipeline,
        topics,
        commands: deps.commands ?? new CommandRegistry(),
        events: new TypedEventEmitter(),
        stopping: new AbortController(),
        subscriptions,
        connection,
        documents: new RetainedDocuments(deviceId, topics, connection, clock),
        eventPublisher: new EventPublisher(deviceId, topics, connection, clock),
        homeAssistant,
    };
}
/** The built-in commands (ping, get-state, logs…), dispatch of every command, and HA's birth message. */
function serveCommands(deps, parts) {
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
    subscriptions.add([HA_STATUS_TOPIC], (_topic, payload) => {
        if (payload.toString('utf8').trim() === 'online')
            parts.homeAssistant.announce();
    });
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
    });
}
/** Every (re)connection: presence, the retained documents, what queued up offline, discovery, the outbox. */
function onConnect(parts, log) {
    const { connection, topics } = parts;
    return ({ url, protocolVersion }) => {
        log.info('connected to broker', { url, protocolVersion });
        const online = encode('status', connection.statusMessage('online', true));
        connection.publishSafe(topics.status, online, { qos: 1, retain: true });
        parts.documents.republishAll();
        parts.eventPublisher.flush();
        parts.homeAssistant.announce();
        parts.drainer.kick();
        parts.events.emit('connected', { url, protocolVersion });
    };
}
export function createFleetAgent(deps) {
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
        subscribe: (filters, handler) => subscriptions.add(filters, handler),
        publish: (topic, payload, opts) => connection.publish(topic, payload, opts),
        onConnected: (listener) => events.on('connected', () => listener()),
        async start() {
            if (connection.link)
                return;
            const link = await connection.open();
            link.events.on('connected', onConnect(parts, deps.logger));
            link.events.on('disconnected', (e) => events.emit('disconnected', e));
            link.start();
            telemetry?.start();
        },
        async stop() {
            if (stopping.signal.aborted)
                return;
            stopping.abort(new Error('fleet agent stopping'));
            telemetry?.stop();
            parts.drainer.stop();
            await connection.close();
            outbox.close();
            await connection.closeBroker();
        },
        setDocument: (kind, data) => parts.documents.set(kind, data),
        publishEvent: (type, data) => parts.eventPublisher.publish(type, data),
        announceHomeAssistant: () => parts.homeAssistant.announce(),
    };
}
//# sourceMappingURL=agent.js.map