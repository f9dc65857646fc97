import type { JsonSchema } from '../../lib/schema.js';
import { modelsConfigSchema } from '../../models/config.js';
import { otaSchema } from '../../ota/config.js';
import { type HttpConfig, httpSchema, type LogConfig, logSchema } from './sections/core.js';
import { type MqttConfig, mqttSchema } from './sections/mqtt.js';
import { ollamaSchema } from './sections/ollama.js';
import { runtimeSchema, slotsSchema } from './sections/slots.js';
import { telemetrySchema } from './sections/telemetry.js';
import { visionSchema } from './sections/vision.js';
import { voiceSchema } from './sections/voice.js';
import { wyomingSchema } from './sections/wyoming.js';

export interface AgentConfig {
  deviceId?: string;
  tags: string[];
  dataDir: string;
  /** Root for capability detection: `/` on a board, a fixture tree in tests. */
  root: string;
  http: HttpConfig;
  log: LogConfig;
  mqtt: MqttConfig;
  /** Sections owned by later modules; each validates its own part. */
  [section: string]: unknown;
}

export const agentConfigSchema: JsonSchema = {
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
    wyoming: wyomingSchema,
    ollama: ollamaSchema,
    runtime: runtimeSchema,
  },
};
