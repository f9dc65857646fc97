import type { JsonSchema } from '../../common/schema.js';

// The `voice` section: where audio comes from and goes to, how speech is cut into requests, and how long
// transcripts are kept. Absent keys take the defaults (agent/workloads/config.ts). The models are not named
// here: the stages use the runtime's slots voice.vad, voice.asr, voice.llm, voice.omni and voice.tts (the
// `slots` section), so they get placement, fallback and hot swap like every other model.

export interface VoiceConfig {
  enabled: boolean;
  /** Where the board's own microphone/speaker session reads and plays (dashboard sessions use the WebSocket). */
  input: { source: 'none' | 'alsa' | 'wav'; device: string; wavPath?: string };
  output: { sink: 'none' | 'alsa' | 'wav'; device: string; wavPath?: string };
  mode: 'vad' | 'push-to-talk';
  duplex: 'half' | 'full';
  bargeIn: boolean;
  bargeInMarginDb: number;
  bargeInMinSpeechMs: number;
  vad: { threshold: number; minSpeechMs: number; hangoverMs: number; maxUtteranceMs: number; padMs: number };
  systemPrompt: string;
  maxNewTokens: number;
  maxHistoryMessages: number;
  espeak: { command: string; voice: string; wordsPerMinute: number };
  /** Transcripts are personal data: kept at most this long and this many. */
  retention: { maxTurns: number; maxAgeHours: number };
  maxSessions: number;
}

export const voiceDefaults: VoiceConfig = {
  enabled: true,
  input: { source: 'none', device: 'default' },
  output: { sink: 'none', device: 'default' },
  mode: 'vad',
  duplex: 'half',
  bargeIn: true,
  bargeInMarginDb: 15,
  bargeInMinSpeechMs: 96,
  vad: { threshold: 0.5, minSpeechMs: 250, hangoverMs: 500, maxUtteranceMs: 20_000, padMs: 30 },
  systemPrompt:
    'You are a helpful voice assistant on a small device. Answer briefly, in plain spoken sentences.',
  maxNewTokens: 256,
  maxHistoryMessages: 12,
  espeak: { command: 'espeak-ng', voice: 'en-us', wordsPerMinute: 175 },
  retention: { maxTurns: 1000, maxAgeHours: 72 },
  maxSessions: 2,
};

const str: JsonSchema = { type: 'string', minLength: 1 };
const int = (minimum: number, maximum?: number): JsonSchema => ({
  type: 'integer',
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
});

export const voiceSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    input: {
      type: 'object',
      additionalProperties: false,
      properties: { source: { enum: ['none', 'alsa', 'wav'] }, device: str, wavPath: str },
    },
    output: {
      type: 'object',
      additionalProperties: false,
      properties: { sink: { enum: ['none', 'alsa', 'wav'] }, device: str, wavPath: str },
    },
    mode: { enum: ['vad', 'push-to-talk'] },
    duplex: { enum: ['half', 'full'], description: 'half unless the board cancels its own echo' },
    bargeIn: { type: 'boolean' },
    bargeInMarginDb: { type: 'number', minimum: 0, maximum: 60 },
    bargeInMinSpeechMs: int(0, 2000),
    vad: {
      type: 'object',
      additionalProperties: false,
      properties: {
        threshold: { type: 'number', minimum: 0.05, maximum: 0.95 },
        minSpeechMs: int(0, 5000),
        hangoverMs: int(32, 5000),
        maxUtteranceMs: int(1000, 30_000),
        padMs: int(0, 1000),
      },
    },
    systemPrompt: { type: 'string' },
    maxNewTokens: int(1, 8192),
    maxHistoryMessages: int(0, 200),
    espeak: {
      type: 'object',
      additionalProperties: false,
      properties: { command: str, voice: str, wordsPerMinute: int(80, 450) },
    },
    retention: {
      type: 'object',
      additionalProperties: false,
      properties: { maxTurns: int(0), maxAgeHours: int(1) },
    },
    maxSessions: int(1, 64),
  },
};
