import { randomUUID } from 'node:crypto';
import type { IClientOptions, IClientPublishOptions, MqttClient } from 'mqtt';
import { errorMessage, MnnEdgeError } from '../errors.js';
import { backoffDelay } from './backoff.js';
import { connectMqtt } from './transport.js';

// The operator tools' connection (fleet ls/cmd/watch, ota publish/rollout/status): one broker, or the nodes of
// a cluster. A tool outlives a node: when its connection closes, or a node refuses a subscription (a NATS node
// whose JetStream lost its quorum answers SUBACK with 0x80, "Unspecified error"), the link moves to the next
// node after a jittered wait, subscribes everything again there (retained messages are delivered again, which
// a snapshot like `fleet ls` simply merges) and carries on. Messages reach listeners through the link, so
// they survive the change of client.

export interface OperatorLinkOptions {
  /** One broker, or the nodes of a cluster in the order they are tried. */
  urls: readonly string[];
  /** Left out: MQTT 5, and 3.1.1 from the first node that refuses 5 on (NATS speaks 3.1.1 only). */
  protocolVersion?: 4 | 5;
  username?: string;
  password?: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  clientId?: string;
  /** Per attempt; a node in the middle of a leader election may accept TCP and never send CONNACK. */
  connectTimeoutMs?: number;
  /** Waits between attempts after a node is lost (jittered, growing once every node failed in a round). */
  reconnect?: { minMs: number; maxMs: number };
  /** How long to keep trying to get back onto a node before operations fail. */
  giveUpAfterMs?: number;
  /** Progress lines ("lost …, moved to …") for the tools' stderr. */
  onNotice?: (line: string) => void;
}

/** CONNACK refusals that mean "not this protocol level": 3.1.1 return code 1, MQTT 5 reason code 0x84. */
const PROTOCOL_REFUSED = new Set([1, 0x84]);

export type LinkMessageHandler = (topic: string, payload: Buffer, packet: { retain?: boolean }) => void;

/**
 * The QoS of every subscription the operator tools make. They read retained messages (statuses, documents,
 * OTA statuses: sent again with every SUBSCRIBE, also after a move to another node) and answers or telemetry
 * on a live clean session, which a QoS 1 subscription would not keep either once the connection is gone. QoS
 * 0 costs a broker nothing more than the delivery; on NATS a QoS 1 subscription is a replicated JetStream
 * consumer made for every `fleet ls` and every command's answers (docs/FLEET.md).
 */
export const OPERATOR_QOS = 0;

/** "Subscribe error: Unspecified error" says nothing of where; this names the node and the filters. */
function grantedError(
  url: string,
  filters: readonly string[],
  granted: { qos: number }[],
): Error | undefined {
  const refused = granted.filter((g) => g.qos >= 0x80);
  if (refused.length === 0) return undefined;
  return new Error(
    `${url} refused the subscription to ${filters.join(', ')} (reason 0x${refused[0]!.qos.toString(16)})`,
  );
}

export class OperatorLink {
  readonly #o: OperatorLinkOptions;
  readonly #handlers = new Set<LinkMessageHandler>();
  /** Filters with their QoS, subscribed again on every node the link moves to. */
  readonly #wanted = new Map<string, 0 | 1>();
  #client: MqttClient | undefined;
  #node = 0;
  #closing = false;
  /** Resolves once a usable client is in place again; undefined while connected. */
  #recovering: Promise<void> | undefined;
  readonly #clientId: string;
  #moves = 0;
  #version: 4 | 5;

  private constructor(o: OperatorLinkOptions) {
    this.#o = o;
    this.#version = o.protocolVersion ?? 5;
    this.#clientId = o.clientId ?? `mnn-edge-operator-${randomUUID().slice(0, 8)}`;
  }

  /** Connects to the first node that accepts; all refusing gives one line per broker with its reason. */
  static async connect(o: OperatorLinkOptions): Promise<OperatorLink> {
    if (o.urls.length === 0) throw new MnnEdgeError('EUSAGE', 'No broker URL given');
    const link = new OperatorLink(o);
    const reasons: string[] = [];
    for (let i = 0; i < o.urls.length; i++) {
      try {
        await link.#connectTo(i);
        return link;
      } catch (err) {
        reasons.push(errorMessage(err));
      }
    }
    throw new MnnEdgeError('ECONNECT', reasons.join('\n'));
  }

  get url(): string {
    return this.#o.urls[this.#node]!;
  }

  get protocolVersion(): 4 | 5 {
    return this.#version;
  }

  /** How often the link moved to another node. */
  get moves(): number {
    return this.#moves;
  }

  onMessage(handler: LinkMessageHandler): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Subscribes here and on every node the link moves to; resolves once a node granted all of them. */
  async subscribe(filters: readonly string[], qos: 0 | 1 = 1): Promise<void> {
    for (const f of filters) this.#wanted.set(f, qos);
    await this.#withClient(async (c) => {
      const granted = await c.subscribeAsync([...filters], { qos });
      const refused = grantedError(this.url, filters, granted);
      if (refused) throw refused;
    });
  }

  async unsubscribe(filters: readonly string[]): Promise<void> {
    for (const f of filters) this.#wanted.delete(f);
    await this.#client?.unsubscribeAsync([...filters]).catch(() => undefined);
  }

  /** QoS 1 publishes are retried on the next node when the current one goes away before its PUBACK. */
  async publish(topic: string, payload: string | Buffer, opts: IClientPublishOptions): Promise<void> {
    await this.#withClient(async (c) => {
      await c.publishAsync(topic, payload, opts);
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#client?.endAsync().catch(() => undefined);
  }

  /** Runs `op` on the current client; a failure that looks like a lost node moves on and runs it again. */
  async #withClient(op: (c: MqttClient) => Promise<void>): Promise<void> {
    const deadline = Date.now() + (this.#o.giveUpAfterMs ?? 120_000);
    for (;;) {
      if (this.#recovering) await this.#recovering;
      const c = this.#client;
      if (this.#closing || !c) throw new MnnEdgeError('ECONNECT', `The connection to ${this.url} is closed`);
      try {
        await op(c);
        return;
      } catch (err) {
        if (this.#closing || Date.now() > deadline) throw err;
        this.#o.onNotice?.(`${errorMessage(err)}; moving to the next broker node`);
        this.#failover(c, errorMessage(err));
      }
    }
  }

  /** One attempt on a node; a node that refuses MQTT 5 is asked again in 3.1.1 unless the level was given. */
  async #connectTo(index: number): Promise<MqttClient> {
    try {
      return await this.#attempt(index);
    } catch (err) {
      const code = (err as { refusedCode?: number }).refusedCode;
      if (this.#o.protocolVersion !== undefined || this.#version !== 5 || !PROTOCOL_REFUSED.has(code ?? -1))
        throw err;
      this.#version = 4;
      this.#o.onNotice?.(`${this.#o.urls[index]} refused MQTT 5; using MQTT 3.1.1`);
      return this.#attempt(index);
    }
  }

  #attempt(index: number): Promise<MqttClient> {
    const url = this.#o.urls[index]!;
    const opts: IClientOptions = {
      clientId: this.#clientId,
      protocolVersion: this.protocolVersion,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: this.#o.connectTimeoutMs ?? 5_000,
      ...(this.#o.username !== undefined ? { username: this.#o.username } : {}),
      ...(this.#o.password !== undefined ? { password: this.#o.password } : {}),
      ...(this.#o.ca ? { ca: this.#o.ca } : {}),
      ...(this.#o.cert ? { cert: this.#o.cert } : {}),
      ...(this.#o.key ? { key: this.#o.key } : {}),
    };
    const client = connectMqtt(url, opts);
    return new Promise<MqttClient>((resolve, reject) => {
      // mqtt.js ends a timed-out attempt with 'close' and no 'error'; our own timer names it.
      const timer = setTimeout(() => fail(new Error('no CONNACK (connect timeout)')), opts.connectTimeout);
      const fail = (err: Error) => {
        clearTimeout(timer);
        client.removeAllListeners('connect');
        client.end(true);
        const e = new MnnEdgeError('ECONNECT', `Cannot connect to ${url}: ${err.message}`);
        const code = (err as { code?: unknown }).code;
        if (typeof code === 'number') Object.assign(e, { refusedCode: code });
        reject(e);
      };
      client.once('connect', () => {
        clearTimeout(timer);
        client.removeAllListeners('close');
        client.removeAllListeners('error');
        client.on('error', () => undefined);
        client.on('message', (topic, payload, packet) => {
          if (client !== this.#client) return;
          for (const h of [...this.#handlers]) h(topic, payload, packet);
        });
        client.on('close', () => {
          if (client === this.#client && !this.#closing) this.#failover(client, 'connection closed');
        });
        this.#client = client;
        this.#node = index;
        resolve(client);
      });
      client.once('error', fail);
      client.once('close', () => fail(new Error('connection closed')));
    });
  }

  /** Leaves `from` (once, however many operations saw it fail) and gets onto a node that grants everything. */
  #failover(from: MqttClient, reason: string): void {
    if (from !== this.#client || this.#recovering) return;
    this.#client = undefined;
    from.removeAllListeners('close');
    from.end(true);
    const lost = this.url;
    const range = this.#o.reconnect ?? { minMs: 250, maxMs: 5_000 };
    const giveUpAt = Date.now() + (this.#o.giveUpAfterMs ?? 120_000);
    this.#recovering = (async () => {
      const nodes = this.#o.urls.length;
      for (let attempt = 0; !this.#closing; attempt++) {
        const index = (this.#node + 1 + attempt) % nodes;
        await new Promise((r) => setTimeout(r, backoffDelay(Math.floor(attempt / nodes) + 1, range)));
        try {
          const c = await this.#connectTo(index);
          const filters = [...this.#wanted.keys()];
          if (filters.length > 0) {
            const granted = await c.subscribeAsync(
              Object.fromEntries([...this.#wanted].map(([f, qos]) => [f, { qos }])),
            );
            const refused = grantedError(this.#o.urls[index]!, filters, granted);
            if (refused) {
              this.#client = undefined;
              c.removeAllListeners('close');
              c.end(true);
              throw refused;
            }
          }
          this.#moves++;
          this.#o.onNotice?.(`lost ${lost} (${reason}); continuing on ${this.url}`);
          return;
        } catch (err) {
          if (Date.now() > giveUpAt)
            throw new MnnEdgeError(
              'ECONNECT',
              `Lost ${lost} (${reason}) and no broker node took over within ${Math.round((this.#o.giveUpAfterMs ?? 120_000) / 1000)} s: ${errorMessage(err)}`,
            );
        }
      }
    })().finally(() => {
      this.#recovering = undefined;
    });
    // Whoever waits on it sees the error; nobody waiting must not crash the tool.
    this.#recovering.catch(() => undefined);
  }
}
