import { parseJsonInput } from '../common/json-input.js';
import { type JsonSchema, type SchemaError, validate } from '../common/schema.js';

// The payload schemas of the MQTT contract. Messages are validated before they are sent and when they are
// received; the same objects are exported to docs/schemas/protocol/ for consumers in other languages.

export const PROTOCOL_VERSION = 1;
const SCHEMA_BASE = 'https://mnn-edge.dev/schemas/protocol';

const deviceId: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' };
const epochMs: JsonSchema = { type: 'integer', minimum: 0, description: 'Epoch milliseconds.' };
const version: JsonSchema = { const: PROTOCOL_VERSION, description: 'Protocol version.' };
const tag: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' };

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

export interface MetricSummary {
  min: number;
  mean: number;
  max: number;
  n: number;
}

export interface SlotTelemetry {
  model?: string;
  variant?: string;
  backend?: string;
  requests: number;
  errors: number;
}

export interface TelemetryMessage {
  v: 1;
  deviceId: string;
  /** Per-device sequence number: consecutive, survives restarts; gaps mean loss, repeats mean duplicates. */
  seq: number;
  /** End of the interval, epoch ms. */
  ts: number;
  intervalMs: number;
  /** For MQTT 3.1.1 consumers, which get no message expiry property. */
  expiresAt: number;
  metrics: Record<string, MetricSummary>;
  slots: Record<string, SlotTelemetry>;
  outbox: { queued: number; dropped: { expired: number; overflow: number; diskFull: number } };
}

const count: JsonSchema = { type: 'integer', minimum: 0 };

export const telemetrySchema: JsonSchema = {
  $id: `${SCHEMA_BASE}/telemetry.json`,
  title: 'telemetry (QoS 1, from the outbox)',
  type: 'object',
  additionalProperties: false,
  required: ['v', 'deviceId', 'seq', 'ts', 'intervalMs', 'expiresAt', 'metrics', 'slots', 'outbox'],
  properties: {
    v: version,
    deviceId,
    seq: { type: 'integer', minimum: 1 },
    ts: epochMs,
    intervalMs: { type: 'integer', minimum: 1 },
    expiresAt: epochMs,
    metrics: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['min', 'mean', 'max', 'n'],
        properties: {
          min: { type: 'number' },
          mean: { type: 'number' },
          max: { type: 'number' },
          n: { type: 'integer', minimum: 1 },
        },
      },
    },
    slots: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['requests', 'errors'],
        properties: {
          model: { type: 'string' },
          variant: { type: 'string' },
          backend: { type: 'string' },
          requests: count,
          errors: count,
        },
      },
    },
    outbox: {
      type: 'object',
      additionalProperties: false,
      required: ['queued', 'dropped'],
      properties: {
        queued: count,
        dropped: {
          type: 'object',
          additionalProperties: false,
          required: ['expired', 'overflow', 'diskFull'],
          properties: { expired: count, overflow: count, diskFull: count },
        },
      },
    },
  },
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

export class ProtocolViolation extends Error {
  readonly code = 'EPROTOCOL';
  readonly errors: SchemaError[];
  constructor(kind: string, errors: SchemaError[]) {
    super(`Invalid ${kind} message: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
    this.name = 'ProtocolViolation';
    this.errors = errors;
  }
}

/** Validates an outgoing message and serialises it; a violation is a bug on our side, so it throws. */
export function encode<K extends ProtocolMessageKind>(kind: K, message: unknown): string {
  const errors = validate(protocolSchemas[kind], message);
  if (errors.length > 0) throw new ProtocolViolation(kind, errors);
  return JSON.stringify(message);
}

/** Parses (shared input limits) and validates an incoming message; throws MnnEdgeError or ProtocolViolation. */
export function decode<T>(kind: ProtocolMessageKind, payload: Buffer | string): T {
  const value: unknown = parseJsonInput(payload, `${kind} message`);
  const errors = validate(protocolSchemas[kind], value);
  if (errors.length > 0) throw new ProtocolViolation(kind, errors);
  return value as T;
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
