import { randomUUID } from 'node:crypto';
import type { IClientOptions, IClientPublishOptions, MqttClient } from 'mqtt';
import { MnnEdgeError } from '../common/errors.js';
import { parseJsonInput } from '../common/json-input.js';
import { validate } from '../common/schema.js';
import { connectMqtt } from './mqtt-transport.js';
import {
  type CommandRequest,
  type CommandResponse,
  commandResponseSchema,
  type DocumentMessage,
  documentSchema,
  encode,
  type FleetSelector,
  type StatusMessage,
  statusSchema,
  type TelemetryMessage,
  telemetrySchema,
} from './protocol.js';
import {
  DOCUMENT_KINDS,
  type DocumentKind,
  deviceIdOf,
  deviceTopics,
  fleetTopics,
  TOPIC_PREFIX,
} from './topics.js';

// The operator's side of the contract, used by `mnn-edge fleet` and by the tests: read the fleet from
// retained messages, send commands and collect responses, follow telemetry. Incoming messages are validated
// like the agent validates its input; invalid ones are reported, not trusted.

export interface OperatorOptions {
  url: string;
  protocolVersion?: 4 | 5;
  username?: string;
  password?: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  clientId?: string;
  connectTimeoutMs?: number;
}

export interface DeviceSummary {
  deviceId: string;
  status?: StatusMessage;
  documents: Partial<Record<DocumentKind, DocumentMessage>>;
  lastTelemetry?: TelemetryMessage;
  /** When the last telemetry arrived here (epoch ms); retained status carries no age of its own. */
  lastTelemetryAt?: number;
}

export class FleetOperator {
  readonly #client: MqttClient;
  readonly #v5: boolean;

  private constructor(client: MqttClient, v5: boolean) {
    this.#client = client;
    this.#v5 = v5;
  }

  static async connect(options: OperatorOptions): Promise<FleetOperator> {
    const protocolVersion = options.protocolVersion ?? 5;
    const opts: IClientOptions = {
      clientId: options.clientId ?? `mnn-edge-operator-${randomUUID().slice(0, 8)}`,
      protocolVersion,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      ...(options.username !== undefined ? { username: options.username } : {}),
      ...(options.password !== undefined ? { password: options.password } : {}),
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.cert ? { cert: options.cert } : {}),
      ...(options.key ? { key: options.key } : {}),
    };
    const client = connectMqtt(options.url, opts);
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => {
        client.end(true);
        reject(new MnnEdgeError('ECONNECT', `Cannot connect to ${options.url}: ${err.message}`));
      };
      client.once('connect', () => {
        client.off('error', fail);
        resolve();
      });
      client.once('error', fail);
      client.once('close', () => fail(new Error('connection closed')));
    });
    client.removeAllListeners('close');
    client.on('error', () => undefined);
    return new FleetOperator(client, protocolVersion === 5);
  }

  /** Collects retained status and documents; telemetry seen within `waitMs` adds its age. */
  async listDevices(waitMs = 1_000): Promise<DeviceSummary[]> {
    const devices = new Map<string, DeviceSummary>();
    const entry = (id: string) => {
      const known = devices.get(id);
      if (known) return known;
      const d: DeviceSummary = { deviceId: id, documents: {} };
      devices.set(id, d);
      return d;
    };
    const onMessage = (topic: string, payload: Buffer) => {
      const id = deviceIdOf(topic);
      if (id === undefined) return;
      // The topic names the device by its segment (`edge-7_2Elab`), the summary by its id (`edge-7.lab`).
      const leaf = topic.split('/').slice(2).join('/');
      const value = parseJson(payload);
      if (leaf === 'status' && validate(statusSchema, value).length === 0)
        entry(id).status = value as StatusMessage;
      else if (
        (DOCUMENT_KINDS as readonly string[]).includes(leaf) &&
        validate(documentSchema, value).length === 0
      )
        entry(id).documents[leaf as DocumentKind] = value as DocumentMessage;
      else if (leaf === 'telemetry' && validate(telemetrySchema, value).length === 0) {
        const d = entry(id);
        d.lastTelemetry = value as TelemetryMessage;
        d.lastTelemetryAt = Date.now();
      }
    };
    const filters = [fleetTopics.allStatus, fleetTopics.allTelemetry, ...fleetTopics.allDocuments];
    this.#client.on('message', onMessage);
    try {
      await this.#client.subscribeAsync(filters, { qos: 1 });
      await new Promise((r) => setTimeout(r, waitMs));
      await this.#client.unsubscribeAsync(filters);
    } finally {
      this.#client.off('message', onMessage);
    }
    return [...devices.values()].sort((a, b) => a.deviceId.localeCompare(b.deviceId));
  }

  /**
   * Sends a command to one device, or fleet-wide with a selector, and gathers responses until `timeoutMs`
   * (one device: until its response). Works over MQTT 5 (properties) and 3.1.1 (payload fields) alike.
   */
  async command(
    target: { deviceId: string } | { selector: FleetSelector },
    name: string,
    params: Record<string, unknown> = {},
    timeoutMs = 10_000,
  ): Promise<CommandResponse[]> {
    const id = randomUUID();
    const single = 'deviceId' in target;
    const responseTopic = single
      ? `${deviceTopics(target.deviceId).responses}/${id}`
      : `${TOPIC_PREFIX}/+/responses/${id}`;
    const request: CommandRequest = {
      v: 1,
      id,
      params,
      expiresAt: Date.now() + timeoutMs,
      // A fleet-wide response topic holds a `+` (each device fills in its id), which MQTT 5 forbids in the
      // Response Topic property; it travels in the payload instead.
      ...(this.#v5 && single ? {} : { responseTopic }),
      ...(single ? {} : { selector: target.selector }),
    };
    const topic = single ? deviceTopics(target.deviceId).command(name) : fleetTopics.command(name);
    const responses: CommandResponse[] = [];
    await this.#client.subscribeAsync(responseTopic, { qos: 1 });
    let finish: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const onMessage = (t: string, payload: Buffer) => {
      if (!t.endsWith(`/responses/${id}`)) return;
      const value = parseJson(payload);
      if (validate(commandResponseSchema, value).length > 0) return;
      const r = value as CommandResponse;
      if (r.id !== id) return;
      responses.push(r);
      if (single) finish();
    };
    this.#client.on('message', onMessage);
    const timer = setTimeout(finish, timeoutMs);
    try {
      const opts: IClientPublishOptions = { qos: 1 };
      if (this.#v5)
        opts.properties = {
          ...(single ? { responseTopic } : {}),
          correlationData: Buffer.from(id),
          messageExpiryInterval: Math.ceil(timeoutMs / 1000),
        };
      await this.#client.publishAsync(topic, encode('command-request', request), opts);
      await done;
    } finally {
      clearTimeout(timer);
      this.#client.off('message', onMessage);
      await this.#client.unsubscribeAsync(responseTopic).catch(() => undefined);
    }
    if (single && responses.length === 0)
      throw new MnnEdgeError(
        'ETIMEOUT',
        `No response from ${target.deviceId} to ${name} within ${timeoutMs} ms`,
      );
    return responses;
  }

  /** Calls `onTelemetry` for every valid telemetry message until the returned function is called. */
  async watch(
    onTelemetry: (m: TelemetryMessage) => void,
    onInvalid?: (topic: string, why: string) => void,
  ): Promise<() => Promise<void>> {
    const onMessage = (topic: string, payload: Buffer) => {
      if (!topic.endsWith('/telemetry')) return;
      const value = parseJson(payload);
      const errors = validate(telemetrySchema, value);
      if (errors.length === 0) onTelemetry(value as TelemetryMessage);
      else onInvalid?.(topic, errors.map((e) => `${e.path}: ${e.message}`).join('; '));
    };
    this.#client.on('message', onMessage);
    await this.#client.subscribeAsync(fleetTopics.allTelemetry, { qos: 1 });
    return async () => {
      this.#client.off('message', onMessage);
      await this.#client.unsubscribeAsync(fleetTopics.allTelemetry).catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    await this.#client.endAsync();
  }
}

function parseJson(payload: Buffer): unknown {
  try {
    return parseJsonInput(payload, 'fleet message');
  } catch {
    return undefined;
  }
}
