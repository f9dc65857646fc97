export const mqttSchema = {
    type: 'object',
    additionalProperties: false,
    properties: {
        url: { type: 'string', pattern: '^(mqtts?|wss?)://' },
        username: { type: 'string' },
        password: { type: 'string' },
        ca: { type: 'string' },
        cert: { type: 'string' },
        key: { type: 'string' },
        protocolVersion: { enum: [4, 5, 'auto'] },
        embeddedBroker: {
            type: 'object',
            additionalProperties: false,
            properties: {
                enabled: { type: 'boolean' },
                port: { type: 'integer', minimum: 0, maximum: 65535 },
                host: { type: 'string' },
            },
        },
        keepaliveSec: { type: 'integer', minimum: 5, maximum: 3600 },
        reconnect: {
            type: 'object',
            additionalProperties: false,
            required: ['minMs', 'maxMs'],
            properties: {
                minMs: { type: 'integer', minimum: 10 },
                maxMs: { type: 'integer', minimum: 10 },
            },
        },
        maxCommandBytes: { type: 'integer', minimum: 256, maximum: 16777216 },
        sessionExpirySec: { type: 'integer', minimum: 0, maximum: 4294967295 },
    },
};
//# sourceMappingURL=mqtt.js.map