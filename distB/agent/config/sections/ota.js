export const otaDefaults = {
    trustedKeys: [],
    threshold: 1,
    download: {
        maxBytesPerSecond: 0,
        retries: 8,
        backoffMs: 500,
        maxBackoffMs: 30_000,
        headroomBytes: 64 * 1024 * 1024,
        idleTimeoutMs: 30_000,
        minBytesPerSecond: 1024,
        rateWindowMs: 60_000,
    },
    health: {
        prompt: 'Hello',
        maxNewTokens: 16,
        maxTtftMs: 5000,
        minDecodeRatio: 0.8,
        timeoutMs: 60_000,
        maxAttempts: 3,
    },
};
export const otaSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        trustedKeys: {
            type: 'array',
            items: {
                type: 'object',
                additionalProperties: false,
                required: ['publicKey'],
                properties: {
                    publicKey: { type: 'string', minLength: 1 },
                    keyId: { type: 'string', pattern: '^[0-9a-f]{64}$' },
                    comment: { type: 'string' },
                },
            },
        },
        threshold: { type: 'integer', minimum: 1 },
        rootFile: { type: 'string', minLength: 1 },
        stagingDir: { type: 'string', minLength: 1 },
        download: {
            type: 'object',
            additionalProperties: false,
            properties: {
                maxBytesPerSecond: { type: 'integer', minimum: 0, description: '0 = unlimited' },
                retries: { type: 'integer', minimum: 0 },
                backoffMs: { type: 'integer', minimum: 1 },
                maxBackoffMs: { type: 'integer', minimum: 1 },
                headroomBytes: { type: 'integer', minimum: 0 },
                idleTimeoutMs: { type: 'integer', minimum: 100 },
                minBytesPerSecond: {
                    type: 'integer',
                    minimum: 0,
                    description: 'Slow-retrieval bound: slowest average rate over rateWindowMs; 0 disables it',
                },
                rateWindowMs: { type: 'integer', minimum: 100 },
                ca: { type: 'string' },
            },
        },
        health: {
            type: 'object',
            additionalProperties: false,
            properties: {
                prompt: { type: 'string', minLength: 1 },
                maxNewTokens: { type: 'integer', minimum: 1 },
                maxTtftMs: { type: 'number', exclusiveMinimum: 0 },
                minDecodeRatio: { type: 'number', minimum: 0, maximum: 10 },
                timeoutMs: { type: 'integer', minimum: 100 },
                referenceImage: { type: 'string', minLength: 1 },
                maxAttempts: { type: 'integer', minimum: 1 },
            },
        },
        llmDemo: { type: 'string', minLength: 1 },
    },
};
/** The section as the config file gave it (already schema-checked), with defaults filled in. */
export function resolveOtaConfig(raw) {
    const r = (raw ?? {});
    return {
        ...otaDefaults,
        ...r,
        trustedKeys: r.trustedKeys ?? [],
        download: { ...otaDefaults.download, ...r.download },
        health: { ...otaDefaults.health, ...r.health },
    };
}
//# sourceMappingURL=ota.js.map