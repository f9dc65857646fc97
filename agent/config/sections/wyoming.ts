import { INPUT_LIMITS } from '../../../lib/input-limits.js';
import type { JsonSchema } from '../../../lib/schema.js';

// The `wyoming` section: the voice workload as a Wyoming protocol server (Home Assistant's Assist pipeline talks
// to speech-to-text, text-to-speech and conversation services this way). Off unless the configuration turns it
// on: the image's config does, development and tests do not. The models are the voice slots, as for the
// dashboard's voice sessions; nothing here names one.

export interface WyomingConfig {
  enabled: boolean;
  /** Address the TCP server binds to; 0.0.0.0 so Home Assistant on another machine can reach it. */
  bind: string;
  port: number;
  /** Announce `_wyoming._tcp` over mDNS while the server listens, so Home Assistant discovers the board. */
  mdns: boolean;
  /** Client addresses or CIDR ranges allowed to connect (IPv4 or IPv6); empty: anyone who can reach the port. */
  allow: string[];
  /**
   * A shared secret a client must send first as `{"type":"auth","data":{"secret":"…"}}`. Home Assistant's
   * Wyoming integration cannot send it: use `allow` for Home Assistant, the secret for your own clients.
   */
  secret?: string;
  /** A connection with no complete event for this long is closed. */
  idleTimeoutS: number;
  /**
   * Open connections at once. Counted apart from the agent's live sessions (http.maxSessions), which a
   * connection takes only while a flow runs: idle Home Assistant connections cannot starve the dashboard.
   */
  maxConnections: number;
  /** Longest header line (the JSON before the newline). */
  maxHeaderBytes: number;
  /** Largest `data_length` (extra JSON data). */
  maxDataBytes: number;
  /** Largest `payload_length` (one audio chunk). */
  maxPayloadBytes: number;
  /** Longest audio a `transcribe` may send, in seconds (at 16 kHz mono float it is buffered in memory). */
  maxAudioSeconds: number;
  /** Longest text `synthesize` and the conversation accept. */
  maxTextChars: number;
  /** Languages announced for speech-to-text and conversation (the model packages do not declare theirs). */
  languages: string[];
  /** The ASR model's instruction and answer length: audio-input LLMs are asked for a transcript. */
  asr: { instruction: string; maxNewTokens: number };
  /** Conversations (Home Assistant's conversation ids) whose history is kept; the least recent is forgotten. */
  maxConversations: number;
}

export const wyomingDefaults: WyomingConfig = {
  enabled: false,
  bind: '0.0.0.0',
  port: 10300,
  mdns: true,
  allow: [],
  idleTimeoutS: 120,
  maxConnections: 32,
  maxHeaderBytes: 16 * 1024,
  maxDataBytes: 256 * 1024,
  maxPayloadBytes: 1024 * 1024,
  maxAudioSeconds: 30,
  maxTextChars: INPUT_LIMITS.speechTextMaxChars,
  languages: ['en'],
  asr: { instruction: 'Transcribe the audio exactly.', maxNewTokens: 128 },
  maxConversations: 16,
};

const int = (minimum: number, maximum: number): JsonSchema => ({ type: 'integer', minimum, maximum });

export const wyomingSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: {
      type: 'boolean',
      description: 'Run the Wyoming server (on in the image, off in development).',
    },
    bind: { type: 'string', minLength: 1 },
    port: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      description: '10300 by default; 0 lets the OS choose.',
    },
    mdns: { type: 'boolean' },
    allow: {
      type: 'array',
      maxItems: 64,
      items: { type: 'string', pattern: '^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$' },
      description: 'Client addresses or CIDR ranges, e.g. "192.168.1.10" or "192.168.1.0/24".',
    },
    secret: { type: 'string', minLength: 16, maxLength: 256 },
    idleTimeoutS: int(5, 3600),
    maxConnections: {
      ...int(1, 1024),
      description: 'Open connections at once, apart from the live sessions (32).',
    },
    maxHeaderBytes: int(1024, 1024 * 1024),
    maxDataBytes: int(1024, INPUT_LIMITS.jsonMaxBytes),
    maxPayloadBytes: int(1024, 16 * 1024 * 1024),
    maxAudioSeconds: int(1, 300),
    maxTextChars: int(1, 100_000),
    languages: {
      type: 'array',
      minItems: 1,
      maxItems: 64,
      items: { type: 'string', minLength: 2, maxLength: 16 },
    },
    asr: {
      type: 'object',
      additionalProperties: false,
      properties: { instruction: { type: 'string', minLength: 1 }, maxNewTokens: int(1, 4096) },
    },
    maxConversations: int(1, 1024),
  },
};
