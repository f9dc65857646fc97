import type { JsonSchema } from '../../../lib/schema.js';

export interface HttpConfig {
  bind: string;
  port: number;
  tls?: { cert: string; key: string };
  /** Announce the dashboard on the LAN over mDNS (on in the image's config, off in development and tests). */
  mdns: boolean;
  maxUploadBytes: number;
  maxWsMessageBytes: number;
  maxSessions: number;
  /** Lifetime of a dashboard login, in seconds. */
  sessionTtlS: number;
  /** A read-only token for GET /metrics alone (a scraper's credential); the pairing token works too. */
  metricsToken?: string;
}

export const httpSchema: JsonSchema = {
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
    metricsToken: {
      type: 'string',
      pattern: '^[A-Za-z0-9._~+/=-]{16,256}$',
      description: 'Read-only bearer token for GET /metrics only (16-256 token characters).',
    },
  },
};

export interface LogConfig {
  level: 'debug' | 'info' | 'warn' | 'error';
  /** Debug namespaces, like DEBUG=mnn-edge:runtime* */
  debug?: string;
}

export const logSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    level: { enum: ['debug', 'info', 'warn', 'error'] },
    debug: { type: 'string' },
  },
};
