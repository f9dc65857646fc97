import type { IClientPublishOptions, MqttClient } from 'mqtt';
import { errorMessage } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { connectMqtt } from '../../lib/mqtt/transport.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import type { MqttConfig } from '../config/sections/mqtt.js';
import { backoffDelay, buildClientOptions, DEFAULT_RECONNECT, type WillMessage } from './client-options.js';
import type { SubscriptionRegistry } from './subscriptions.js';

// The agent's link to its broker (one attempt's options in client-options.ts), for as long as the agent runs. `start()` returns at once: the first
// attempt, like every later one, happens in the background, and failures are retried forever with full-jitter
// backoff (a board often boots before its network or broker). Each attempt is a fresh client, so the protocol
// level can change between attempts: with `protocolVersion: "auto"` MQTT 5 is tried first and 3.1.1 right
// after a broker refuses 5, and the level that worked is kept until a broker refuses it.
//
// A cluster is a list of URLs: an attempt goes to one node, and a failed attempt or a lost connection moves the
// next attempt to the next node. The wait before it is jittered within mqtt.reconnect and grows only once a
// whole round of nodes has failed, so the devices of a lost node spread over the others within a few minMs.

export type ProtocolChoice = 4 | 5 | 'auto';

export interface BrokerLinkOptions {
  /** One broker, or the nodes of a cluster in the order they are tried. */
  urls: readonly string[];
  config: MqttConfig;
  protocol: ProtocolChoice;
  clientId: string;
  /** The Last Will for an attempt at this protocol level (the offline status names the level). */
  will: (protocolVersion: 4 | 5) => WillMessage;
  subscriptions: SubscriptionRegistry;
  logger: Logger;
  now?: () => number;
  random?: () => number;
}

export interface BrokerLinkEvents extends Record<string, unknown> {
  connected: { url: string; protocolVersion: 4 | 5 };
  disconnected: { reason: string };
}

export type BrokerLinkStatus =
  | { state: 'connected'; url: string; protocolVersion: 4 | 5; sinceMs: number; lastError?: string }
  | {
      state: 'connecting' | 'waiting';
      url: string;
      /** Why the last attempt or connection ended; absent before the first attempt ended. */
      lastError?: string;
      /** When the next attempt starts (state `waiting`). */
      retryAtMs?: number;
      failedAttempts: number;
    }
  | { state: 'stopped'; url: string };

/** CONNACK refusals that mean "not this protocol level": 3.1.1 return code 1, MQTT 5 reason code 0x84. */
const PROTOCOL_REFUSED = new Set([1, 0x84]);

export class BrokerLink {
  readonly events = new TypedEventEmitter<BrokerLinkEvents>();
  readonly #o: BrokerLinkOptions;
  readonly #now: () => number;
  #client: MqttClient | undefined;
  /** CONNACK received: publishing works (answers to commands queued in the session, say). */
  #acked = false;
  /** And the subscriptions are in place: the device is listening. */
  #connected = false;
  #connectedSince = 0;
  #stopped = false;
  #started = false;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #retryAt: number | undefined;
  #lastError: string | undefined;
  /**
   * Completion callbacks of QoS 1 publishes awaiting their PUBACK on the current client. With a kept session
   * MQTT.js holds them for a resend on the same client, but each attempt is a new client: on close they fail
   * here, and their owners (the outbox) send again on the next connection.
   */
  readonly #awaitingAck = new Set<(err: Error) => void>();
  /** The level that last connected (auto mode keeps it); undefined until then. */
  #negotiated: 4 | 5 | undefined;
  #attemptVersion: 4 | 5;
  /** Which of `urls` the current or next attempt goes to. */
  #node = 0;

  constructor(options: BrokerLinkOptions) {
    if (options.urls.length === 0) throw new Error('BrokerLink needs at least one broker URL');
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#attemptVersion = options.protocol === 'auto' ? 5 : options.protocol;
  }

  /** The node in use now, or the one the next attempt goes to. */
  get url(): string {
    return this.#o.urls[this.#node]!;
  }

  get urls(): readonly string[] {
    return this.#o.urls;
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** The level of the current connection, or of the attempt under way. */
  get protocolVersion(): 4 | 5 {
    return this.#negotiated ?? this.#attemptVersion;
  }

  /** The client once the broker accepted the connection; undefined while disconnected. */
  get client(): MqttClient | undefined {
    return this.#acked ? this.#client : undefined;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  status(): BrokerLinkStatus {
    const url = this.url;
    if (this.#stopped) return { state: 'stopped', url };
    if (this.#connected)
      return {
        state: 'connected',
        url,
        protocolVersion: this.protocolVersion,
        sinceMs: this.#connectedSince,
        ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      };
    return {
      state: this.#timer !== undefined ? 'waiting' : 'connecting',
      url,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#retryAt !== undefined ? { retryAtMs: this.#retryAt } : {}),
      failedAttempts: this.#failures,
    };
  }

  /** Starts connecting in the background; never waits for the broker. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#attempt();
  }

  /**
   * Publishes on the current connection; `done` gets an error at once when there is none (callers that must
   * not lose a message keep it themselves, like the outbox).
   */
  publish(
    topic: string,
    payload: string | Buffer,
    opts: IClientPublishOptions,
    done?: (err: Error | undefined) => void,
  ): void {
    const c = this.client;
    if (!c) {
      done?.(new Error('not connected to the broker'));
      return;
    }
    let settled = false;
    const fail = (err: Error) => settle(err);
    const settle = (err: Error | undefined) => {
      if (settled) return;
      settled = true;
      this.#awaitingAck.delete(fail);
      done?.(err);
    };
    this.#awaitingAck.add(fail);
    c.publish(topic, payload, opts, (err) => settle(err ?? undefined));
  }

  /** Ends the connection; `farewell` runs first while still connected (the clean offline status). */
  async stop(farewell?: (client: MqttClient) => Promise<void>): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const c = this.#client;
    if (!c) return;
    if (this.#acked && farewell) await farewell(c).catch(() => undefined);
    this.#acked = false;
    this.#connected = false;
    this.#o.subscriptions.disconnected();
    await c.endAsync(true).catch(() => undefined);
  }

  #attempt(): void {
    this.#timer = undefined;
    this.#retryAt = undefined;
    if (this.#stopped) return;
    const version = this.protocolVersion;
    const log = this.#o.logger;
    const url = this.url;
    const options = buildClientOptions(
      this.#o.config,
      { url, protocolVersion: version },
      this.#o.clientId,
      this.#o.will(version),
    );
    const client = connectMqtt(url, options);
    this.#client = client;
    let refusedLevel = false;
    let closed = false;
    let attemptError: string | undefined;
    client.on('connect', () => {
      if (client !== this.#client) return;
      this.#acked = true;
      this.#failures = 0;
      if (this.#o.protocol === 'auto' && this.#negotiated === undefined)
        log.info('negotiated the MQTT protocol level', { protocolVersion: version });
      this.#negotiated = version;
      // Connected counts from the SUBACK: whatever is sent to the device after it says "online" reaches it.
      void this.#o.subscriptions.connected(client).then(() => {
        if (client !== this.#client || closed) return;
        this.#connected = true;
        this.#connectedSince = this.#now();
        this.events.emit('connected', { url, protocolVersion: version });
      });
    });
    client.on('message', (topic, payload, packet) => {
      if (client === this.#client) this.#o.subscriptions.dispatch(topic, payload, packet);
    });
    client.on('error', (err: Error & { code?: string | number }) => {
      attemptError = errorMessage(err);
      if (typeof err.code === 'number' && PROTOCOL_REFUSED.has(err.code)) refusedLevel = true;
      log.debug('mqtt error', { error: attemptError, protocolVersion: version });
    });
    client.on('close', () => {
      if (closed || client !== this.#client) return;
      closed = true;
      const wasConnected = this.#acked;
      this.#acked = false;
      this.#connected = false;
      this.#client = undefined;
      client.end(true);
      const lost = new Error('connection closed before the broker acknowledged');
      for (const fail of [...this.#awaitingAck]) fail(lost);
      if (wasConnected) this.#o.subscriptions.disconnected();
      if (this.#stopped) return;
      const reason = attemptError ?? 'connection closed';
      this.#lastError = reason;
      this.events.emit('disconnected', { reason });
      this.#scheduleNext(version, refusedLevel, reason, wasConnected);
    });
  }

  #scheduleNext(version: 4 | 5, refusedLevel: boolean, reason: string, wasConnected: boolean): void {
    const lostUrl = this.url;
    let delay: number;
    if (refusedLevel && this.#o.protocol === 'auto' && version === 5) {
      // This broker does not speak that level: try the other one on the same node now, and learn again.
      this.#negotiated = undefined;
      this.#attemptVersion = 4;
      this.#o.logger.info('the broker refused MQTT 5; trying MQTT 3.1.1', { url: lostUrl });
      delay = 0;
    } else {
      if (refusedLevel && this.#o.protocol === 'auto') {
        this.#negotiated = undefined;
        this.#attemptVersion = 5;
      }
      // The next node; the backoff exponent counts whole rounds over the nodes, and starts at 1 after a lost
      // connection so that even the first retry is spread over [minMs, 2·minMs] rather than all at minMs.
      const nodes = this.#o.urls.length;
      this.#node = (this.#node + 1) % nodes;
      const round = Math.floor(this.#failures / nodes);
      this.#failures++;
      delay = backoffDelay(round + 1, this.#range(), this.#o.random);
    }
    this.#retryAt = this.#now() + delay;
    this.#o.logger.info('broker connection down; retrying', {
      wasConnected,
      url: lostUrl,
      next: this.url,
      reason,
      inMs: delay,
      failedAttempts: this.#failures,
    });
    this.#timer = setTimeout(() => this.#attempt(), delay);
  }

  #range(): { minMs: number; maxMs: number } {
    return this.#o.config.reconnect ?? DEFAULT_RECONNECT;
  }
}
