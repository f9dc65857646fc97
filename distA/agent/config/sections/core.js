export const httpSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        bind: { type: 'string', minLength: 1, description: 'Address the HTTP server binds to.' },
        port: { type: 'integer', minimum: 0, maximum: 65535, description: '0 lets the OS choose.' },
        tls: {
            type: 'object',
            additionalProperties: false,
            required: ['cert', 'key'],
            properties: { cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } },
        },
        mdns: { type: 'boolean' },
        maxUploadBytes: { type: 'integer', minimum: 1024 },
        maxWsMessageBytes: { type: 'integer', minimum: 1024 },
        maxSessions: { type: 'integer', minimum: 1 },
        sessionTtlS: {
            type: 'integer',
            minimum: 60,
            maximum: 31_536_000,
            description: 'Lifetime of a dashboard login in seconds (default 7 days).',
        },
    },
};
export const logSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        level: { enum: ['debug', 'info', 'warn', 'error'] },
        debug: { type: 'string' },
    },
};
//# sourceMappingURL=core.js.map