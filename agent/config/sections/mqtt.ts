import type { JsonSchema } from '../../common/schema.js';

export interface MqttConfig {
  /** mqtt://, mqtts://, ws://, wss://. Absent: the agent runs an embedded broker on localhost. */
  url?: string;
  username?: string;
  password?: string;
  ca?: string;
  cert?: string;
  key?: string;
  protocolVersion: 4 | 5;
  embeddedBroker: { enabled: boolean; port: number; host: string };
}

export const mqttSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    url: { type: 'string', pattern: '^(mqtts?|wss?)://' },
    username: { type: 'string' },
    password: { type: 'string' },
    ca: { type: 'string' },
    cert: { type: 'string' },
    key: { type: 'string' },
    protocolVersion: { enum: [4, 5] },
    embeddedBroker: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        port: { type: 'integer', minimum: 0, maximum: 65535 },
        host: { type: 'string' },
      },
    },
  },
};
