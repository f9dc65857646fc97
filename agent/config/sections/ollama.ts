import type { JsonSchema } from '../../../lib/schema.js';

// The `ollama` section: the Ollama-compatible API (Home Assistant's Ollama integration, Open WebUI, the `ollama`
// clients). It is on the agent's port, behind the agent's auth, unless `enabled` turns it off. Ollama's own port
// (11434) is offered as a listener of its own, off by default: it serves only the Ollama API, still asks for the
// bearer token, and takes clients from the `allow` list alone when that list is not empty.

export interface OllamaListenerConfig {
  enabled: boolean;
  /** Address the listener binds to; 0.0.0.0 lets other machines (Home Assistant) reach it. */
  bind: string;
  port: number;
  /** Client addresses or CIDR ranges allowed to connect (IPv4 or IPv6); empty: anyone who can reach the port. */
  allow: string[];
}

export interface OllamaConfig {
  /** Serve /api/tags, /api/chat, … on the agent's port. */
  enabled: boolean;
  listener: OllamaListenerConfig;
}

export const ollamaDefaults: OllamaConfig = {
  enabled: true,
  listener: { enabled: false, bind: '0.0.0.0', port: 11434, allow: [] },
};

export const ollamaSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: {
      type: 'boolean',
      description: "The Ollama-compatible API on the agent's port (/api/tags, /api/chat, …); on by default.",
    },
    listener: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: {
          type: 'boolean',
          description: "A listener on Ollama's own port serving only the Ollama API; off by default.",
        },
        bind: { type: 'string', minLength: 1 },
        port: {
          type: 'integer',
          minimum: 0,
          maximum: 65535,
          description: '11434 by default; 0 lets the OS choose.',
        },
        allow: {
          type: 'array',
          maxItems: 64,
          items: { type: 'string', pattern: '^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$' },
          description: 'Client addresses or CIDR ranges, e.g. "192.168.1.10" or "192.168.1.0/24".',
        },
      },
    },
  },
};
