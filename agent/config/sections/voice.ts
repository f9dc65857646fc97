import type { JsonSchema } from '../../../lib/schema.js';
import { type ToolsConfig, toolsDefaults, toolsSchema } from './tools.js';

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
  /** The wake word in front of the board's own loop (the model is the one on slot voice.wake). */
  wake: WakeConfig;
  /** The acting assistant's tools and limits (tools.ts). */
  tools: ToolsConfig;
}

export interface WakeKeywordConfig {
  /** Score in [0, 1] a frame must reach (default: the package's, else 0.5). */
  threshold?: number;
  /** Consecutive frames over the threshold that make a detection. */
  triggerFrames?: number;
  /** No second detection of this keyword for this long. */
  refractoryMs?: number;
  /** false: the keyword is scored (and charted) but never wakes the board. */
  enabled?: boolean;
}

export interface WakeConfig {
  /** false: the board's loop sends every utterance the VAD finds to ASR, as without a wake word. */
  enabled: boolean;
  /** After a detection, how long to wait for speech before going back to idle. */
  listenTimeoutMs: number;
  /** After a reply, how long the board listens again without the wake word (0: not at all). */
  followUpMs: number;
  /** Audio kept from before the detection, so the request starts with the wake word, not after it. */
  preRollMs: number;
  /** A short tone on the speaker when the wake word is heard. */
  sound: boolean;
  /** Per keyword name (the package's head names): overrides of the package's trigger rule. */
  keywords: Record<string, WakeKeywordConfig>;
  /** The last detections as WAV clips in the data directory, to find false triggers (off by default). */
  clips: { enabled: boolean; maxCount: number; maxBytes: number };
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
  wake: {
    enabled: false,
    listenTimeoutMs: 5000,
    followUpMs: 0,
    preRollMs: 1500,
    sound: true,
    keywords: {},
    clips: { enabled: false, maxCount: 20, maxBytes: 4 * 1024 * 1024 },
  },
  tools: toolsDefaults,
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
    wake: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        listenTimeoutMs: int(500, 60_000),
        followUpMs: int(0, 60_000),
        preRollMs: int(0, 5000),
        sound: { type: 'boolean' },
        keywords: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            properties: {
              threshold: { type: 'number', minimum: 0.01, maximum: 0.99 },
              triggerFrames: int(1, 50),
              refractoryMs: int(0, 60_000),
              enabled: { type: 'boolean' },
            },
          },
        },
        clips: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean' },
            maxCount: int(1, 1000),
            maxBytes: int(65_536, 1 << 30),
          },
        },
      },
    },
    tools: toolsSchema,
  },
};
