const hubSourceSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        endpoint: { type: 'string', pattern: '^https?://[^\\s]+$' },
        owner: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$' },
    },
};
export const modelsConfigSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        diskBudgetBytes: { type: 'integer', minimum: 0 },
        maxPackageBytes: { type: 'integer', minimum: 1 },
        maxEntryBytes: { type: 'integer', minimum: 1 },
        maxCompressionRatio: { type: 'number', minimum: 1 },
        sources: {
            type: 'object',
            additionalProperties: false,
            properties: {
                hf: hubSourceSchema,
                ms: hubSourceSchema,
                allowLoopbackHttp: { type: 'boolean' },
            },
        },
    },
};
export function modelsConfigOf(section) {
    return typeof section === 'object' && section !== null ? section : {};
}
/** The store's unpacking limits from configuration: every path that opens the store (import, pull, OTA) uses it. */
export function storeLimitsOf(config) {
    return {
        ...(config.maxPackageBytes !== undefined ? { maxTotalBytes: config.maxPackageBytes } : {}),
        ...(config.maxEntryBytes !== undefined ? { maxEntryBytes: config.maxEntryBytes } : {}),
        ...(config.maxCompressionRatio !== undefined ? { maxCompressionRatio: config.maxCompressionRatio } : {}),
    };
}
//# sourceMappingURL=config.js.map