import type { IClientPublishOptions, MqttClient } from 'mqtt';
import type { Clock } from '../common/clock.js';
import { MnnEdgeError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { MqttConfig } from '../config/sections/mqtt.js';
import type { QosPublisher } from '../telemetry/drain.js';
import type { OutboxMessage } from '../telemetry/outbox.js';
import { type EmbeddedBroker, startEmbeddedBroker } from './embedded-broker.js';
import { type DocumentMessage, type EventMessage, encode, PROTOCOL_VERSION } from './protocol.js';
import type { DocumentKind, deviceTopics } from './topics.js';

// Pieces of the fleet agent (agent.ts) that need none of its state: which broker to use, how outbox messages
// go out, and the clean goodbye on stop.

export interface BrokerTarget {
  url: string;
  protocolVersion: 4 | 5;
}

/** The configured broker, else an embedded one (or whatever already listens on its port). */
export async function chooseBroker(
  mqtt: MqttConfig,
  log: Logger,
): Promise<{ target: BrokerTarget; broker?: EmbeddedBroker }> {
  if (mqtt.url) return { target: { url: mqtt.url, protocolVersion: mqtt.protocolVersion } };
  if (!mqtt.embeddedBroker.enabled)
    throw new MnnEdgeError('ECONFIG', 'No MQTT broker: set mqtt.url or enable mqtt.embeddedBroker');
  try {
    const broker = await startEmbeddedBroker({
      host: mqtt.embeddedBroker.host,
      port: mqtt.embeddedBroker.port,
      logger: log.child('broker'),
    });
    // aedes speaks MQTT 3.1.1 only; the contract's payload fields stand in for the MQTT 5 properties.
    return { target: { url: broker.url, protocolVersion: 4 }, broker };
  } catch (err) {
    // Something already listens on the local broker port — on a developer's machine usually Debian's
    // mosquitto. Use it rather than refuse to start; the fleet CLI finds the agent there too.
    if (!(err instanceof MnnEdgeError && err.details?.['errno'] === 'EADDRINUSE')) throw err;
    const { host, port } = mqtt.embeddedBroker;
    const url = `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}`;
    log.warn('the embedded broker port is taken; using the broker already listening there', { url });
    return { target: { url, protocolVersion: mqtt.protocolVersion } };
  }
}

/** The outbox drainer's way out: QoS 1 on the current client, retained for telemetry, expiring under v5. */
export function outboxPublisher(link: {
  client: () => MqttClient | undefined;
  v5: () => boolean;
  telemetryTopic: string;
  clock: Clock;
}): QosPublisher {
  return {
    get connected() {
      return link.client()?.connected === true;
    },
    publish(m: OutboxMessage, done) {
      const c = link.client();
      if (c === undefined) return done(new Error('not connected'));
      // Telemetry is also retained, so a new subscriber (`fleet ls`) sees the latest at once. Brokers set the
      // retain flag only on that on-subscribe copy, never on live forwards: sequence counters skip it.
      const opts: IClientPublishOptions = { qos: 1, retain: m.topic === link.telemetryTopic };
      if (link.v5()) {
        // The drainer never hands over an expired message, so at least one second remains.
        opts.properties = {
          messageExpiryInterval: Math.max(1, Math.ceil((m.expiresAt - link.clock.nowMs()) / 1000)),
        };
      }
      c.publish(m.topic, m.payload, opts, (err) => done(err ?? undefined));
    },
  };
}

/** A clean stop says so itself (the broker discards the Last Will on a normal DISCONNECT), then disconnects. */
export async function sayGoodbye(c: MqttClient, statusTopic: string, offline: () => string): Promise<void> {
  if (c.connected) {
    await new Promise<void>((resolve) => {
      const giveUp = setTimeout(resolve, 2_000);
      c.publish(statusTopic, offline(), { qos: 1, retain: true }, () => {
        clearTimeout(giveUp);
        resolve();
      });
    });
  }
  await c.endAsync(true).catch(() => undefined);
}

const MAX_QUEUED_EVENTS = 100;

export interface PublicationsLink {
  deviceId: string;
  clock: Clock;
  topics: ReturnType<typeof deviceTopics>;
  connected: () => boolean;
  publish: (topic: string, payload: string, opts: IClientPublishOptions) => void;
}

/** The retained documents (republished on every connect) and the events that wait, bounded, while offline. */
export class Publications {
  readonly documents = new Map<DocumentKind, { json: string; ts: number }>();
  readonly #queuedEvents: EventMessage[] = [];
  readonly #link: PublicationsLink;

  constructor(link: PublicationsLink) {
    this.#link = link;
  }

  setDocument(kind: DocumentKind, data: Record<string, unknown>): void {
    const { deviceId, clock } = this.#link;
    const json = encode('document', {
      v: PROTOCOL_VERSION,
      deviceId,
      ts: clock.nowMs(),
      data,
    } satisfies DocumentMessage);
    const same = this.documents.get(kind);
    if (same && JSON.stringify(JSON.parse(same.json).data) === JSON.stringify(data)) return;
    this.documents.set(kind, { json, ts: clock.nowMs() });
    this.#publishDocument(kind);
  }

  publishEvent(type: string, data?: Record<string, unknown>): void {
    const { deviceId, clock, topics } = this.#link;
    const e: EventMessage = {
      v: PROTOCOL_VERSION,
      deviceId,
      ts: clock.nowMs(),
      type,
      ...(data ? { data } : {}),
    };
    const payload = encode('event', e);
    if (this.#link.connected()) this.#link.publish(topics.events, payload, { qos: 1 });
    else {
      this.#queuedEvents.push(e);
      if (this.#queuedEvents.length > MAX_QUEUED_EVENTS) this.#queuedEvents.shift();
    }
  }

  /** On connect: every document again, then the events kept while offline. */
  flush(): void {
    for (const kind of this.documents.keys()) this.#publishDocument(kind);
    for (const e of this.#queuedEvents.splice(0))
      this.#link.publish(this.#link.topics.events, encode('event', e), { qos: 1 });
  }

  #publishDocument(kind: DocumentKind): void {
    const doc = this.documents.get(kind);
    if (!doc) return;
    this.#link.publish(this.#link.topics.document(kind), doc.json, { qos: 1, retain: true });
  }
}
