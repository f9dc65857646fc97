import { randomUUID } from 'node:crypto';
import type { IClientPublishOptions } from 'mqtt';
import { MnnEdgeError } from '../../../lib/errors.js';
import { parseJsonInput } from '../../../lib/json-input.js';
import { OPERATOR_QOS, OperatorLink } from '../../../lib/mqtt/operator-link.js';
import { validate } from '../../../lib/schema.js';
import {
  DOCUMENT_KINDS,
  type DocumentKind,
  deviceIdOf,
  deviceTopics,
  fleetTopics,
  TOPIC_PREFIX,
} from '../../../lib/topics.js';
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
} from '../../fleet/protocol.js';

// The operator's side of the contract, used by `mnn-edge fleet` and by the tests: read the fleet from
// retained messages, send commands and collect responses, follow telemetry. Incoming messages are validated
// like the agent validates its input; invalid ones are reported, not trusted.

export interface OperatorOptions {
  /** One broker, or the nodes of a cluster: a lost node moves the tool to the next one (OperatorLink). */
  url: string | readonly string[];
  protocolVersion?: 4 | 5;
  username?: string;
  password?: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  clientId?: string;
  connectTimeoutMs?: number;
  /** Lines about moving between broker nodes, for stderr. */
  onNotice?: (line: string) => void;
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
  readonly #link: OperatorLink;
  readonly #v5: boolean;

  private constructor(link: OperatorLink) {
    this.#link = link;
    this.#v5 = link.protocolVersion === 5;
  }

  static async connect(options: OperatorOptions): Promise<FleetOperator> {
    const { url, ...rest } = options;
    const link = await OperatorLink.connect({ ...rest, urls: typeof url === 'string' ? [url] : url });
    return new FleetOperator(link);
  }

  /** The broker node in use now. */
  get url(): string {
    return this.#link.url;
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
    let lastRetained = Date.now();
    const onMessage = (topic: string, payload: Buffer, packet: { retain?: boolean }) => {
      if (packet.retain) lastRetained = Date.now();
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
        d.lastTelemetryAt = packet.retain ? (value as TelemetryMessage).ts : Date.now();
      }
    };
    const filters = [fleetTopics.allStatus, fleetTopics.allTelemetry, ...fleetTopics.allDocuments];
    const off = this.#link.onMessage(onMessage);
    try {
      await this.#link.subscribe(filters, OPERATOR_QOS);
      // Retained messages arrive right after the SUBACK, a thousand devices' worth in a burst: the snapshot is
      // complete once none has come for `waitMs` (live telemetry, not retained, does not hold it open).
      lastRetained = Date.now();
      while (Date.now() - lastRetained < waitMs)
        await new Promise((r) => setTimeout(r, Math.max(10, waitMs - (Date.now() - lastRetained))));
      await this.#link.unsubscribe(filters);
    } finally {
      off();
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
    onResponse?: (r: CommandResponse) => void,
    /** Fleet-wide: stop waiting before `timeoutMs` once this says the responses are complete. */
    doneWhen?: (responses: readonly CommandResponse[]) => boolean,
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
    await this.#link.subscribe([responseTopic], OPERATOR_QOS);
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
      // QoS 1 is at least once, and a device sends its answer again when its connection dropped before the
      // broker acknowledged it (a cluster node may have passed it on already): the first per device counts.
      if (responses.some((known) => known.deviceId === r.deviceId)) return;
      responses.push(r);
      onResponse?.(r);
      if (single || doneWhen?.(responses)) finish();
    };
    const off = this.#link.onMessage(onMessage);
    const timer = setTimeout(finish, timeoutMs);
    try {
      const opts: IClientPublishOptions = { qos: 1 };
      if (this.#v5)
        opts.properties = {
          ...(single ? { responseTopic } : {}),
          correlationData: Buffer.from(id),
          messageExpiryInterval: Math.ceil(timeoutMs / 1000),
        };
      await this.#link.publish(topic, encode('command-request', request), opts);
      await done;
    } finally {
      clearTimeout(timer);
      off();
      await this.#link.unsubscribe([responseTopic]);
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
    const off = this.#link.onMessage(onMessage);
    await this.#link.subscribe([fleetTopics.allTelemetry], OPERATOR_QOS);
    return async () => {
      off();
      await this.#link.unsubscribe([fleetTopics.allTelemetry]);
    };
  }

  async close(): Promise<void> {
    await this.#link.close();
  }
}

function parseJson(payload: Buffer): unknown {
  try {
    return parseJsonInput(payload, 'fleet message');
  } catch {
    return undefined;
  }
}
