import type { JsonSchema } from '../../lib/schema.js';
import { deviceIdSchema, encodeWire, epochMsSchema, SCHEMA_BASE, versionSchema } from '../../lib/wire.js';

// The telemetry message (topic telemetry, QoS 1, from the outbox): owned here, collected with the other messages
// of the MQTT contract in fleet/protocol.ts.

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
  /** The last decode speed the slot had, tokens/s (0 before its first generation): never absent, so a gauge
   *  reading it (Home Assistant's `<slot> tokens/s`) always has a value. */
  tokensPerSec?: number;
  /** Requests the slot served in this message's interval (0: the rate above is from an earlier one). */
  intervalRequests?: number;
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
    v: versionSchema,
    deviceId: deviceIdSchema,
    seq: { type: 'integer', minimum: 1 },
    ts: epochMsSchema,
    intervalMs: { type: 'integer', minimum: 1 },
    expiresAt: epochMsSchema,
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
          tokensPerSec: { type: 'number', minimum: 0 },
          intervalRequests: count,
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

/** Validates and serialises one telemetry message; a violation is a bug on our side, so it throws. */
export function encodeTelemetry(message: TelemetryMessage): string {
  return encodeWire('telemetry', telemetrySchema, message);
}
