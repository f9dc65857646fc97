import type { JsonSchema } from '../../lib/schema.js';
import {
  decodeWire,
  deviceIdSchema as deviceId,
  encodeWire,
  epochMsSchema as epochMs,
  SCHEMA_BASE,
  tagSchema as tag,
  versionSchema as version,
} from '../../lib/wire.js';
import { telemetrySchema } from '../telemetry/message.js';

// The payload schemas of the MQTT contract. Messages are validated before they are sent and when they are
// received; the same objects are exported to docs/schemas/protocol/ for consumers in other languages. The
// telemetry message is the telemetry module's own (telemetry/message.ts); the shared shapes are lib/wire.ts.

export { PROTOCOL_VERSION, ProtocolViolation } from '../../lib/wire.js';
export {
  type MetricSummary,
  type SlotTelemetry,
  type TelemetryMessage,
  telemetrySchema,
} from '../telemetry/message.js';

export interface BoardInfo {
  family: string;
  model?: string;
  soc?: string;
}

export interface StatusMessage {
  v: 1;
  state: 'online' | 'offline';
  deviceId: string;
  ts?: number;
  agentVersion?: string;
  board?: BoardInfo;
  tags?: string[];
  /** The MQTT protocol level this device speaks (4 = 3.1.1, 5). */
  mqtt?: 4 | 5;
}

export const statusSchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/status.json`,
  title: 'status (retained; Last Will "offline")',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'state', 'deviceId'],
  properties: {
    v: version,
    state: { enum: ['online', 'offline'] },
    deviceId,
    ts: epochMs,
    agentVersion: { type: 'string', maxLength: 64 },
    board: {
      type: 'object',
      additionalProperties: false,
      required: ['family'],
      properties: {
        family: { type: 'string', minLength: 1, maxLength: 64 },
        model: { type: 'string', maxLength: 128 },
        soc: { type: 'string', maxLength: 64 },
      },
    },
    tags: { type: 'array', items: tag, maxItems: 64 },
    mqtt: { enum: [4, 5] },
  },
};

export interface DocumentMessage {
  v: 1;
  deviceId: string;
  ts: number;
  /** Owned by the module that publishes it (detect, plan, models); the contract fixes only the envelope. */
  data: Record<string, unknown>;
}

export const documentSchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/document.json`,
  title: 'retained document: capabilities, placement, models',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'deviceId', 'ts', 'data'],
  properties: { v: version, deviceId, ts: epochMs, data: { type: 'object' } },
};

export interface EventMessage {
  v: 1;
  deviceId: string;
  ts: number;
  type: string;
  data?: Record<string, unknown>;
}

export const eventSchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/event.json`,
  title: 'event',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'deviceId', 'ts', 'type'],
  properties: {
    v: version,
    deviceId,
    ts: epochMs,
    type: { type: 'string', pattern: '^[a-z][a-z0-9.-]{0,63}$' },
    data: { type: 'object' },
  },
};

export interface FleetSelector {
  deviceIds?: string[];
  tags?: string[];
  boardFamilies?: string[];
}

export const selectorSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Fleet commands only. Every given criterion must match (a list matches if any entry does).',
  properties: {
    deviceIds: { type: 'array', items: deviceId, minItems: 1, maxItems: 1000 },
    tags: { type: 'array', items: tag, minItems: 1, maxItems: 64 },
    boardFamilies: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 64 },
  },
};

export interface CommandRequest {
  v?: 1;
  /** Correlation id; MQTT 5 requesters may use correlation data instead. */
  id?: string;
  params?: Record<string, unknown>;
  /** MQTT 3.1.1 stand-ins for the MQTT 5 properties. */
  responseTopic?: string;
  expiresAt?: number;
  selector?: FleetSelector;
}

export const commandRequestSchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/command-request.json`,
  title: 'command request (cmd/<name>)',
  type: 'object',
  additionalProperties: false,
  properties: {
    v: version,
    id: { type: 'string', minLength: 1, maxLength: 128 },
    params: { type: 'object' },
    responseTopic: { type: 'string', minLength: 1, maxLength: 512 },
    expiresAt: epochMs,
    selector: selectorSchema,
  },
};

export const ERROR_CODES = [
  'EBADJSON',
  'EPAYLOAD',
  'ETOODEEP',
  'ETOOLARGE',
  'ESCHEMA',
  'EUNKNOWN',
  'EPARAMS',
  'EEXPIRED',
  'ERESPONSETOPIC',
  'EHANDLER',
  'ETIMEOUT',
  'ECONFLICT',
  'EREFUSED',
] as const;
export type CommandErrorCode = (typeof ERROR_CODES)[number];

export interface CommandResponse {
  v: 1;
  deviceId: string;
  command: string;
  id?: string;
  ok: boolean;
  ts: number;
  result?: unknown;
  error?: { code: CommandErrorCode; message: string };
}

export const commandResponseSchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/command-response.json`,
  title: 'command response',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'deviceId', 'command', 'ok', 'ts'],
  properties: {
    v: version,
    deviceId,
    command: { type: 'string', maxLength: 64 },
    id: { type: 'string', maxLength: 128 },
    ok: { type: 'boolean' },
    ts: epochMs,
    result: {},
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      properties: { code: { enum: ERROR_CODES }, message: { type: 'string' } },
    },
  },
};

export const protocolSchemas = {
  status: statusSchema,
  document: documentSchema,
  telemetry: telemetrySchema,
  event: eventSchema,
  'command-request': commandRequestSchema,
  'command-response': commandResponseSchema,
} as const;

export type ProtocolMessageKind = keyof typeof protocolSchemas;

/** Validates an outgoing message and serialises it; a violation is a bug on our side, so it throws. */
export function encode<K extends ProtocolMessageKind>(kind: K, message: unknown): string {
  return encodeWire(kind, protocolSchemas[kind], message);
}

/** Parses (shared input limits) and validates an incoming message; throws MnnEdgeError or ProtocolViolation. */
export function decode<T>(kind: ProtocolMessageKind, payload: Buffer | string): T {
  return decodeWire<T>(kind, protocolSchemas[kind], payload);
}

/** JSON documents for docs/schemas/protocol/<kind>.json. */
export function exportProtocolSchemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [kind, schema] of Object.entries(protocolSchemas)) {
    out[`${kind}.json`] =
      JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...schema }, null, 2) + '\n';
  }
  return out;
}
