import type { IClientPublishOptions, MqttClient } from 'mqtt';
import type { Clock } from '../../lib/clock.js';
import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { DeviceTopics } from '../../lib/topics.js';
import { brokerUrls, type MqttConfig } from '../config/sections/mqtt.js';
import { BrokerLink, type BrokerLinkStatus } from './broker-link.js';
import { type EmbeddedBroker, startEmbeddedBroker } from './embedded-broker.js';
import { type BoardInfo, encode, PROTOCOL_VERSION, type StatusMessage } from './protocol.js';
import type { SubscriptionRegistry } from './subscriptions.js';

// The fleet agent's connection lifecycle: which broker (configured, embedded, or the one already on the embedded
// port), the BrokerLink that keeps reconnecting (broker-link.ts), the presence it announces (status + Last Will), and publishing
// on whatever connection is current. The other parts of the agent publish only through here.

/** Who this device says it is in its status message. */
export interface Presence {
  deviceId: string;
  agentVersion: string;
  tags: readonly string[];
  board: () => BoardInfo | undefined;
}

export interface AgentConnectionOptions {
  mqtt: MqttConfig;
  topics: DeviceTopics;
  presence: Presence;
  subscriptions: SubscriptionRegistry;
  clock: Clock;
  logger: Logger;
  random: () => number;
}

/** The broker to use: the configured URL, else the embedded broker (or whoever already listens on its port). */
async function resolveBroker(
  mqtt: MqttConfig,
  log: Logger,
): Promise<{ urls: string[]; protocol: MqttConfig['protocolVersion']; broker?: EmbeddedBroker }> {
  const configured = brokerUrls(mqtt);
  if (configured.length > 0) return { urls: configured, protocol: mqtt.protocolVersion };
  if (!mqtt.embeddedBroker.enabled) {
    throw new MnnEdgeError('ECONFIG', 'No MQTT broker: set mqtt.url or enable mqtt.embeddedBroker');
  }
  try {
    const broker = await startEmbeddedBroker({
      host: mqtt.embeddedBroker.host,
      port: mqtt.embeddedBroker.port,
      logger: log.child('broker'),
    });
    // aedes speaks MQTT 3.1.1 only; the contract's payload fields stand in for the MQTT 5 properties.
    return { urls: [broker.url], protocol: 4, broker };
  } catch (err) {
    // Something already listens on the local broker port — on a developer's machine usually Debian's
    // mosquitto. Use it rather than refuse to start; the fleet CLI finds the agent there too.
    if (!(err instanceof MnnEdgeError && err.details?.['errno'] === 'EADDRINUSE')) throw err;
    const { host, port } = mqtt.embeddedBroker;
    const url = `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}`;
    log.warn('the embedded broker port is taken; using the broker already listening there', { url });
    return { urls: [url], protocol: mqtt.protocolVersion };
  }
}

/**
 * The MQTT settings of the agent's own link. The embedded broker runs in this process: a link to it cannot go
 * silent while the agent lives, so keep-alive pings (0 turns them off) would only wake the idle agent, a timer
 * every keepaliveSec/2 in the client and one per keepalive in the broker (issue 31, bench/idle).
 */
export function linkConfig(mqtt: MqttConfig, embeddedBroker: boolean): MqttConfig {
  return embeddedBroker ? { ...mqtt, keepaliveSec: 0 } : mqtt;
}

export class AgentConnection {
  readonly #o: AgentConnectionOptions;
  #link: BrokerLink | undefined;
  #broker: EmbeddedBroker | undefined;

  constructor(options: AgentConnectionOptions) {
    this.#o = options;
  }

  /** The current link; undefined before `open`. */
  get link(): BrokerLink | undefined {
    return this.#link;
  }

  get connected(): boolean {
    return this.#link?.connected === true;
  }

  /** Whether the current connection speaks MQTT 5 (properties instead of the payload stand-ins). */
  get v5(): boolean {
    return this.#link?.protocolVersion === 5;
  }

  status(): BrokerLinkStatus | undefined {
    return this.#link?.status();
  }

  /** The retained status message; `protocolVersion` is the level it will go out on (the Last Will's own). */
  statusMessage(
    state: 'online' | 'offline',
    withTs: boolean,
    protocolVersion: 4 | 5 = this.#link?.protocolVersion ?? 5,
  ): StatusMessage {
    const { presence, clock } = this.#o;
    const board = presence.board();
    return {
      v: PROTOCOL_VERSION,
      state,
      deviceId: presence.deviceId,
      ...(withTs ? { ts: clock.nowMs() } : {}),
      agentVersion: presence.agentVersion,
      ...(board ? { board } : {}),
      tags: [...presence.tags],
      mqtt: protocolVersion,
    };
  }

  /** Publishes on the current connection; a failure is only logged (the caller does not wait for it). */
  publishSafe(topic: string, payload: string, opts: IClientPublishOptions): void {
    this.#link?.publish(topic, payload, opts, (err) => {
      if (err) this.#o.logger.debug('publish failed', { topic, error: errorMessage(err) });
    });
  }

  /** QoS 1 publish on the current connection; rejects at once before the agent has started. */
  publish(topic: string, payload: string, opts: IClientPublishOptions): Promise<void> {
    const link = this.#link;
    if (!link) return Promise.reject(new Error('the fleet agent has not started'));
    return new Promise<void>((resolve, reject) =>
      link.publish(topic, payload, opts, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** Finds the broker and builds the link (not yet started); a second call returns the same link. */
  async open(): Promise<BrokerLink> {
    if (this.#link) return this.#link;
    const { mqtt, topics, logger, clock, random, subscriptions } = this.#o;
    const { urls, protocol, broker } = await resolveBroker(mqtt, logger);
    this.#broker = broker;
    this.#link = new BrokerLink({
      urls,
      config: linkConfig(mqtt, broker !== undefined),
      protocol,
      clientId: `mnn-edge-${topics.segment}`,
      will: (level) => ({
        topic: topics.status,
        payload: encode('status', this.statusMessage('offline', false, level)),
      }),
      subscriptions,
      logger: logger.child('link'),
      now: () => clock.nowMs(),
      random,
    });
    return this.#link;
  }

  /** Ends the connection after saying offline itself: the broker discards the Last Will on a clean DISCONNECT. */
  async close(): Promise<void> {
    const topic = this.#o.topics.status;
    await this.#link?.stop(
      (c: MqttClient) =>
        new Promise<void>((resolve) => {
          const giveUp = setTimeout(resolve, 2_000);
          c.publish(
            topic,
            encode('status', this.statusMessage('offline', true)),
            { qos: 1, retain: true },
            () => {
              clearTimeout(giveUp);
              resolve();
            },
          );
        }),
    );
  }

  /** Stops the embedded broker, if this agent started one; after `close` and after the outbox closed. */
  async closeBroker(): Promise<void> {
    await this.#broker?.close();
  }
}
