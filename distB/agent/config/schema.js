import { modelsConfigSchema } from '../../models/config.js';
import { httpSchema, logSchema } from './sections/core.js';
import { mqttSchema } from './sections/mqtt.js';
import { otaSchema } from './sections/ota.js';
import { runtimeSchema, slotsSchema } from './sections/slots.js';
import { telemetrySchema } from './sections/telemetry.js';
import { visionSchema } from './sections/vision.js';
import { voiceSchema } from './sections/voice.js';
export const agentConfigSchema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://mnn-edge.dev/schemas/agent-config.json',
    title: 'mnn-edge agent configuration',
    type: 'object',
    additionalProperties: false,
    properties: {
        deviceId: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
        tags: { type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$' } },
        dataDir: { type: 'string', minLength: 1 },
        root: { type: 'string', minLength: 1 },
        http: httpSchema,
        log: logSchema,
        mqtt: mqttSchema,
        telemetry: telemetrySchema,
        slots: slotsSchema,
        models: modelsConfigSchema,
        ota: otaSchema,
        voice: voiceSchema,
        vision: visionSchema,
        runtime: runtimeSchema,
    },
};
//# sourceMappingURL=schema.js.map