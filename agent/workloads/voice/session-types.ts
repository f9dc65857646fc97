// The types of a voice session (session.ts): its events, options and counters.
import type { Clock } from '../../../lib/clock.js';
import type { VoiceActivityDetector } from '../audio/vad.js';
import type { ChatResult } from '../shared/chat-model.js';
import type { ToolCallRecord } from '../tools/run-call.js';
import type { SegmenterOptions, Utterance } from './segmenter.js';
import type { AsrStage, ReplyStage, TtsStage } from './stages.js';
import type { TurnMetrics, TurnSink } from './turn-store.js';

export type TurnStatus = 'completed' | 'cancelled' | 'failed';

export type VoiceEvents = {
  'speech-start': { atMs: number };
  /** The utterance that becomes a turn (or is ignored because it was too short). */
  'speech-end': { turn: number; speechMs: number; endedBy: Utterance['endedBy'] };
  'speech-discarded': { reason: 'too-short' };
  transcript: { turn: number; text: string };
  'reply-delta': { turn: number; text: string };
  /** The acting assistant called a tool during the turn's reply. */
  'tool-call': { turn: number; id: string; name: string; arguments: Record<string, unknown> };
  'tool-result': { turn: number; id: string; name: string; ok: boolean; content: string; ms: number };
  /** One chunk of speech out; `seq` counts chunks within the turn. */
  audio: { turn: number; seq: number; sampleRate: number; samples: Float32Array };
  /** Speech interrupted a turn: the client should drop what it still has queued for playback. */
  'barge-in': { turn: number };
  'turn-end': {
    turn: number;
    status: TurnStatus;
    transcript: string | undefined;
    reply: string;
    metrics: TurnMetrics;
    finishReason?: ChatResult['finishReason']; // backend-lost: the host died mid-reply (kept in history)
    error?: string;
    /** The tool calls of the reply (name, arguments, outcome, result, ms), when the assistant made any. */
    toolCalls?: ToolCallRecord[];
  };
};

export interface VoiceSessionOptions {
  id: string;
  vad: VoiceActivityDetector;
  segmenter?: Partial<SegmenterOptions>;
  /** Absent when the reply stage hears audio itself (omni). */
  asr?: AsrStage;
  reply: ReplyStage;
  tts: TtsStage;
  systemPrompt: string;
  /** Messages of history kept besides the system prompt (oldest dropped first). */
  maxHistoryMessages: number;
  /** `vad`: hands-free; `push-to-talk`: the client marks the start and end of each request. */
  mode: 'vad' | 'push-to-talk';
  duplex: 'half' | 'full';
  bargeIn: boolean;
  /** In half duplex, input this many dB above the playback level still counts as the user. */
  bargeInMarginDb: number;
  /** Continuous speech needed before a reply is interrupted (a cough should not stop it). */
  bargeInMinSpeechMs: number;
  /** Frames waiting for the VAD beyond this are dropped (and counted) instead of piling up; file sources wait
   *  for `drained()` when pushAudio returns false instead. Default 256 frames (8 s). */
  maxVadBacklogFrames?: number;
  clock: Clock;
  sink?: TurnSink;
  /** Told when a turn starts and ends, so other workloads (vision watch mode) can yield the SoC. */
  priority?: { begin(): void; end(): void };
  onClose?: () => void;
}

export interface VoiceSessionStats {
  turns: number;
  framesDropped: number;
  framesGated: number;
  utterancesIgnored: number;
}
