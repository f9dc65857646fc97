import { parseJsonInput } from './json-input.js';
import { type JsonSchema, type SchemaError, validate } from './schema.js';

// What every MQTT message of the contract shares, whichever feature owns the message: the protocol version, the
// schema address, the common field shapes and the check that turns a schema miss into a ProtocolViolation.
// fleet/protocol.ts collects the messages; telemetry/message.ts owns the telemetry message on top of this.

export const PROTOCOL_VERSION = 1;
export const SCHEMA_BASE = 'https://mnn-edge.dev/schemas/protocol';

export const deviceIdSchema: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' };
export const epochMsSchema: JsonSchema = { type: 'integer', minimum: 0, description: 'Epoch milliseconds.' };
export const versionSchema: JsonSchema = { const: PROTOCOL_VERSION, description: 'Protocol version.' };
export const tagSchema: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' };

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
export function encodeWire(kind: string, schema: JsonSchema, message: unknown): string {
  const errors = validate(schema, message);
  if (errors.length > 0) throw new ProtocolViolation(kind, errors);
  return JSON.stringify(message);
}

/** Parses (shared input limits) and validates an incoming message; throws MnnEdgeError or ProtocolViolation. */
export function decodeWire<T>(kind: string, schema: JsonSchema, payload: Buffer | string): T {
  const value: unknown = parseJsonInput(payload, `${kind} message`);
  const errors = validate(schema, value);
  if (errors.length > 0) throw new ProtocolViolation(kind, errors);
  return value as T;
}
