import { deviceIdSchema, encodeWire, epochMsSchema, SCHEMA_BASE, versionSchema } from '../common/wire.js';
const count = { type: 'integer', minimum: 0 };
export const telemetrySchema = {
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
export function encodeTelemetry(message) {
    return encodeWire('telemetry', telemetrySchema, message);
}
//# sourceMappingURL=message.js.map