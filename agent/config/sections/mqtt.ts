import type { JsonSchema } from '../../../lib/schema.js';

export interface MqttConfig {
  /**
   * mqtt://, mqtts://, ws://, wss://, or a list of them (the nodes of a broker cluster). Absent (and no `urls`):
   * the agent runs an embedded broker on localhost.
   */
  url?: string | string[];
  /** The nodes of a broker cluster, tried in turn: a lost node sends the agent to the next one. */
  urls?: string[];
  username?: string;
  password?: string;
  /** PEM file paths: the broker's CA, and the device's client certificate and key for mTLS. */
  ca?: string;
  cert?: string;
  key?: string;
  /** 4 (3.1.1) or 5 to pin a level; `auto` tries 5 and falls back to 3.1.1 when the broker refuses it. */
  protocolVersion: 4 | 5 | 'auto';
  embeddedBroker: { enabled: boolean; port: number; host: string };
  /** Seconds between PINGREQs; the broker publishes the Last Will after 1.5× this without traffic. */
  keepaliveSec?: number;
  /** Jittered exponential backoff between reconnect attempts. */
  reconnect?: { minMs: number; maxMs: number };
  /** Command payloads above this size are answered with an error instead of being parsed. */
  maxCommandBytes?: number;
  /** How long the broker keeps the session (queued commands and jobs) while offline; 0: clean sessions. */
  sessionExpirySec?: number;
}

const BROKER_URL: JsonSchema = { type: 'string', pattern: '^(mqtts?|wss?)://' };

/**
 * Every broker the configuration names, in order, without repeats: `urls`, then `url` (a string or a list).
 * Empty when none is set (the embedded broker).
 */
export function brokerUrls(mqtt: Pick<MqttConfig, 'url' | 'urls'>): string[] {
  const listed = [...(mqtt.urls ?? []), ...(Array.isArray(mqtt.url) ? mqtt.url : mqtt.url ? [mqtt.url] : [])];
  return [...new Set(listed)];
}

export const mqttSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    url: { anyOf: [BROKER_URL, { type: 'array', minItems: 1, maxItems: 32, items: BROKER_URL }] },
    urls: { type: 'array', minItems: 1, maxItems: 32, items: BROKER_URL },
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
