// Per-turn metrics and transcripts in SQLite, bounded by age and count, plus the rolling summary telemetry reads.

import type { Db } from '../../../lib/sqlite/database.js';
import type { MetricSample } from '../../telemetry/samplers.js';
import type { ToolCallRecord } from '../tools/run-call.js';

export interface TurnMetrics {
  /** Length of the user's utterance. */
  speechMs: number;
  /** End of speech → transcript ready. */
  asrMs?: number;
  /** End of speech → first reply token. */
  ttftMs?: number;
  /** End of speech → first audio chunk out. */
  ttfaMs?: number;
  /** ASR processing time / utterance length. */
  asrRtf?: number;
  /** Synthesis time / synthesised audio length. */
  ttsRtf?: number;
  tokensPerSec?: number;
  promptTokens?: number;
  generatedTokens?: number;
  /** Speech detected during this turn → its work stopped. */
  bargeInMs?: number;
  // The latency budget of a turn, end of speech → first audio, part by part (docs/WORKLOADS.md):
  /** The VAD's end-of-speech decision: the silence it waited for after the last speech (audio time, before t0). */
  vadEndMs?: number;
  /** Reply request → first token: the LLM's time to first token through the runtime and its engine host. */
  llmTtftMs?: number;
  /** First token → first sentence (or clause) complete: the LLM decoding the rest of it. */
  sentenceMs?: number;
  /** First sentence handed to TTS → its first audio chunk. */
  ttsFirstMs?: number;
  /** First audio less ASR, LLM TTFT, sentence and TTS: the time our hand-overs between the stages took. */
  handoverMs?: number;
  /** Prompt tokens whose KV the engine kept from the conversation's earlier turns. */
  kvReusedTokens?: number;
  /** The engine's verdict on that: "hit", "partial (diverged)", "miss (cold)". */
  kvReuse?: string;
}

export interface TurnRecord {
  sessionId: string;
  turn: number;
  startedAt: number;
  status: 'completed' | 'cancelled' | 'failed';
  transcript: string | undefined;
  reply: string | undefined;
  metrics: TurnMetrics;
  error?: string;
  /** The acting assistant's tool calls, in the order they were made. */
  toolCalls?: ToolCallRecord[];
}

export interface TurnRetention {
  maxTurns: number;
  maxAgeHours: number;
}

export interface TurnSink {
  record(turn: TurnRecord): void;
}

type Row = {
  session_id: string;
  turn: number;
  started_at: number;
  status: TurnRecord['status'];
  transcript: string | null;
  reply: string | null;
  speech_ms: number;
  asr_ms: number | null;
  ttft_ms: number | null;
  ttfa_ms: number | null;
  asr_rtf: number | null;
  tts_rtf: number | null;
  tokens_per_sec: number | null;
  prompt_tokens: number | null;
  generated_tokens: number | null;
  barge_in_ms: number | null;
  error: string | null;
  vad_end_ms: number | null;
  llm_ttft_ms: number | null;
  sentence_ms: number | null;
  tts_first_ms: number | null;
  handover_ms: number | null;
  kv_reused_tokens: number | null;
  kv_reuse: string | null;
  tool_calls: string | null;
};

/** The parts of a turn's latency: telemetry publishes their p50 and p95, the dashboard shows them per turn. */
const PARTS: Array<[keyof TurnMetrics, string]> = [
  ['vadEndMs', 'vad_end_ms'],
  ['asrMs', 'asr_ms'],
  ['llmTtftMs', 'llm_ttft_ms'],
  ['sentenceMs', 'sentence_ms'],
  ['ttsFirstMs', 'tts_first_ms'],
  ['handoverMs', 'handover_ms'],
  ['ttfaMs', 'ttfa_ms'],
];

/** The q-quantile (0..1) of `values` by nearest rank; undefined for none. */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const GAUGES: Array<[keyof TurnMetrics, string]> = [
  ['asrMs', 'asr_ms'],
  ['ttftMs', 'ttft_ms'],
  ['ttfaMs', 'ttfa_ms'],
  ['asrRtf', 'asr_rtf'],
  ['ttsRtf', 'tts_rtf'],
  ['tokensPerSec', 'tokens_per_sec'],
  ['bargeInMs', 'barge_in_ms'],
];

export class VoiceTurnStore implements TurnSink {
  readonly #db: Db;
  readonly #retention: TurnRetention;
  readonly #now: () => number;
  readonly #insert;
  /** Turns since telemetry last asked, for means over its interval. */
  #pending: TurnRecord[] = [];

  constructor(db: Db, retention: TurnRetention, now: () => number = Date.now) {
    this.#db = db;
    this.#retention = retention;
    this.#now = now;
    this.#insert =
      db.prepare(`INSERT INTO voice_turns (session_id, turn, started_at, status, transcript, reply,
      speech_ms, asr_ms, ttft_ms, ttfa_ms, asr_rtf, tts_rtf, tokens_per_sec, prompt_tokens, generated_tokens,
      barge_in_ms, error, vad_end_ms, llm_ttft_ms, sentence_ms, tts_first_ms, handover_ms, kv_reused_tokens,
      kv_reuse, tool_calls) VALUES (@session_id, @turn, @started_at, @status, @transcript, @reply, @speech_ms,
      @asr_ms, @ttft_ms, @ttfa_ms, @asr_rtf, @tts_rtf, @tokens_per_sec, @prompt_tokens, @generated_tokens,
      @barge_in_ms, @error, @vad_end_ms, @llm_ttft_ms, @sentence_ms, @tts_first_ms, @handover_ms,
      @kv_reused_tokens, @kv_reuse, @tool_calls)`);
  }

  record(turn: TurnRecord): void {
    const m = turn.metrics;
    const row: Row = {
      session_id: turn.sessionId,
      turn: turn.turn,
      started_at: turn.startedAt,
      status: turn.status,
      transcript: turn.transcript ?? null,
      reply: turn.reply ?? null,
      speech_ms: m.speechMs,
      asr_ms: m.asrMs ?? null,
      ttft_ms: m.ttftMs ?? null,
      ttfa_ms: m.ttfaMs ?? null,
      asr_rtf: m.asrRtf ?? null,
      tts_rtf: m.ttsRtf ?? null,
      tokens_per_sec: m.tokensPerSec ?? null,
      prompt_tokens: m.promptTokens ?? null,
      generated_tokens: m.generatedTokens ?? null,
      barge_in_ms: m.bargeInMs ?? null,
      error: turn.error ?? null,
      vad_end_ms: m.vadEndMs ?? null,
      llm_ttft_ms: m.llmTtftMs ?? null,
      sentence_ms: m.sentenceMs ?? null,
      tts_first_ms: m.ttsFirstMs ?? null,
      handover_ms: m.handoverMs ?? null,
      kv_reused_tokens: m.kvReusedTokens ?? null,
      kv_reuse: m.kvReuse ?? null,
      tool_calls: turn.toolCalls && turn.toolCalls.length > 0 ? JSON.stringify(turn.toolCalls) : null,
    };
    this.#db.transaction(() => {
      this.#insert.run(row);
      this.prune();
    })();
    this.#pending.push(turn);
    if (this.#pending.length > 1000) this.#pending.shift();
  }

  /** Deletes turns beyond the retention limits; returns how many went. */
  prune(): number {
    const cutoff = this.#now() - this.#retention.maxAgeHours * 3_600_000;
    const byAge = this.#db.prepare('DELETE FROM voice_turns WHERE started_at < ?').run(cutoff).changes;
    const byCount = this.#db
      .prepare(
        'DELETE FROM voice_turns WHERE id NOT IN (SELECT id FROM voice_turns ORDER BY id DESC LIMIT ?)',
      )
      .run(this.#retention.maxTurns).changes;
    return byAge + byCount;
  }

  recent(limit = 50): TurnRecord[] {
    const rows = this.#db.prepare('SELECT * FROM voice_turns ORDER BY id DESC LIMIT ?').all(limit) as Row[];
    return rows.map((r) => {
      const metrics: TurnMetrics = { speechMs: r.speech_ms };
      const set = (k: Exclude<keyof TurnMetrics, 'kvReuse'>, v: number | null) => {
        if (v !== null) metrics[k] = v;
      };
      set('asrMs', r.asr_ms);
      set('ttftMs', r.ttft_ms);
      set('ttfaMs', r.ttfa_ms);
      set('asrRtf', r.asr_rtf);
      set('ttsRtf', r.tts_rtf);
      set('tokensPerSec', r.tokens_per_sec);
      set('promptTokens', r.prompt_tokens);
      set('generatedTokens', r.generated_tokens);
      set('bargeInMs', r.barge_in_ms);
      set('vadEndMs', r.vad_end_ms);
      set('llmTtftMs', r.llm_ttft_ms);
      set('sentenceMs', r.sentence_ms);
      set('ttsFirstMs', r.tts_first_ms);
      set('handoverMs', r.handover_ms);
      set('kvReusedTokens', r.kv_reused_tokens);
      if (r.kv_reuse !== null) metrics.kvReuse = r.kv_reuse;
      return {
        sessionId: r.session_id,
        turn: r.turn,
        startedAt: r.started_at,
        status: r.status,
        transcript: r.transcript ?? undefined,
        reply: r.reply ?? undefined,
        metrics,
        ...(r.error !== null ? { error: r.error } : {}),
        ...(r.tool_calls !== null ? { toolCalls: JSON.parse(r.tool_calls) as ToolCallRecord[] } : {}),
      };
    });
  }

  /**
   * Telemetry's view (WorkloadMetricsProvider): turn counts and the mean of each timing over the turns since the
   * last call. Transcripts never leave through telemetry.
   */
  metrics(): MetricSample {
    const turns = this.#pending;
    this.#pending = [];
    const out: MetricSample = {
      'workload.voice.turns': turns.length,
      'workload.voice.turns_cancelled': turns.filter((t) => t.status === 'cancelled').length,
      'workload.voice.turns_failed': turns.filter((t) => t.status === 'failed').length,
    };
    const numbers = (key: keyof TurnMetrics) =>
      turns.map((t) => t.metrics[key]).filter((v): v is number => typeof v === 'number');
    for (const [key, name] of GAUGES) {
      const values = numbers(key);
      if (values.length > 0)
        out[`workload.voice.${name}`] = values.reduce((a, b) => a + b, 0) / values.length;
    }
    // Distributions of the latency budget's parts over the interval's completed turns.
    for (const [key, name] of PARTS) {
      const values = turns
        .filter((t) => t.status === 'completed')
        .flatMap((t) => {
          const v = t.metrics[key];
          return typeof v === 'number' ? [v] : [];
        });
      const p50 = quantile(values, 0.5);
      const p95 = quantile(values, 0.95);
      if (p50 !== undefined) out[`workload.voice.${name}_p50`] = p50;
      if (p95 !== undefined) out[`workload.voice.${name}_p95`] = p95;
    }
    return out;
  }
}
