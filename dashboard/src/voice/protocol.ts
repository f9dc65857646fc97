// The voice socket's messages as the dashboard uses them. The server side belongs to agent/workloads (see
// docs/WORKLOADS.md); everything protocol-specific on the page is in this file, so a change there is a change
// here only. Audio goes up as binary frames of 16 kHz mono s16le; control and events are JSON text frames;
// reply audio comes down as binary s16le frames at the rate announced by the preceding `audio` event.

import type { AssistantToolCallView } from '../../../agent/dashboard-api/wire.js';

export type VoiceMode = 'push-to-talk' | 'vad';

export interface TurnMetricsView {
  speechMs: number;
  asrMs?: number;
  ttftMs?: number;
  ttfaMs?: number;
  tokensPerSec?: number;
  asrRtf?: number;
  ttsRtf?: number;
  /** The latency budget's parts (agent/workloads/voice/turn-store.ts TurnMetrics). */
  vadEndMs?: number;
  llmTtftMs?: number;
  sentenceMs?: number;
  ttsFirstMs?: number;
  handoverMs?: number;
  promptTokens?: number;
  kvReusedTokens?: number;
  kvReuse?: string;
}

export type ServerEvent =
  | { type: 'ready'; mode?: VoiceMode; sampleRate?: number; stages?: Record<string, string> }
  | { type: 'speech-start' }
  | { type: 'speech-end'; turn: number; speechMs: number }
  | { type: 'speech-discarded'; reason: string }
  | { type: 'transcript'; turn: number; text: string }
  | { type: 'reply-delta'; turn: number; text: string }
  | { type: 'audio'; turn: number; seq: number; sampleRate: number }
  | { type: 'barge-in'; turn: number }
  | {
      type: 'turn-end';
      turn: number;
      status: string;
      transcript?: string;
      reply: string;
      metrics: TurnMetricsView;
      /** `backend-lost`: the reply's engine host died mid-answer; `error` says why. */
      finishReason?: string;
      error?: string;
      /** The tools the assistant called in this turn, in order (absent from an agent without tools). */
      toolCalls?: AssistantToolCallView[];
    }
  | { type: 'error'; code?: string; message: string };

export type ClientMessage =
  | { type: 'start'; mode: VoiceMode }
  | { type: 'ptt'; pressed: boolean }
  /** Our playback queue ran dry: lets a half-duplex session stop gating the microphone early. */
  | { type: 'playback-done' }
  /** Speak this text with the session's voice (no ASR, no LLM): tries the speaker and the TTS stage. */
  | { type: 'say'; text: string }
  | { type: 'stop' };

export function parseServerEvent(text: string): ServerEvent | undefined {
  try {
    const v = JSON.parse(text) as { type?: unknown };
    return typeof v === 'object' && v !== null && typeof v.type === 'string' ? (v as ServerEvent) : undefined;
  } catch {
    return undefined;
  }
}

/** Close codes and what to tell the person (the agent's close reason is shown when it gives one). */
export function describeClose(code: number, reason: string): string {
  if (reason) return reason;
  switch (code) {
    case 1009:
      return 'A message was larger than the agent accepts (http.maxWsMessageBytes).';
    case 4429:
      return 'Too many concurrent sessions on the agent; close another voice or vision page and retry.';
    case 4408:
      return 'Messages were sent faster than the agent accepts on one connection.';
    case 1006:
      return 'The connection to the agent was lost.';
    default:
      return `The agent closed the session (code ${code}).`;
  }
}
