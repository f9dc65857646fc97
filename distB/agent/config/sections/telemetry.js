export const defaultTelemetryConfig = {
    enabled: true,
    sampleIntervalMs: 5_000,
    publishIntervalMs: 30_000,
    maintenanceIntervalMs: 6 * 3_600_000,
    outbox: {
        maxMessages: 50_000,
        maxBytes: 64 * 1024 * 1024,
        messageExpirySec: 7 * 86_400,
        flushIntervalMs: 5_000,
        drainRatePerSec: 200,
        maxInflight: 32,
    },
    history: { bucketSec: 60, retentionHours: 24 },
};
const positiveInt = (minimum, description) => ({
    type: 'integer',
    minimum,
    ...(description ? { description } : {}),
});
export const telemetrySchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        enabled: { type: 'boolean' },
        sampleIntervalMs: positiveInt(50),
        publishIntervalMs: positiveInt(50),
        maintenanceIntervalMs: positiveInt(1000),
        outbox: {
            type: 'object',
            additionalProperties: false,
            properties: {
                maxMessages: positiveInt(1),
                maxBytes: positiveInt(1024),
                messageExpirySec: positiveInt(1),
                flushIntervalMs: positiveInt(0, '0 commits every message (no loss window, one fsync each).'),
                drainRatePerSec: positiveInt(0, '0 = unlimited.'),
                maxInflight: positiveInt(1),
            },
        },
        history: {
            type: 'object',
            additionalProperties: false,
            properties: { bucketSec: positiveInt(1), retentionHours: positiveInt(1) },
        },
    },
};
//# sourceMappingURL=telemetry.js.map