// Per-turn metrics and transcripts in SQLite, bounded by age and count, plus the rolling summary telemetry reads.
const GAUGES = [
    ['asrMs', 'asr_ms'],
    ['ttftMs', 'ttft_ms'],
    ['ttfaMs', 'ttfa_ms'],
    ['asrRtf', 'asr_rtf'],
    ['ttsRtf', 'tts_rtf'],
    ['tokensPerSec', 'tokens_per_sec'],
    ['bargeInMs', 'barge_in_ms'],
];
export class VoiceTurnStore {
    #db;
    #retention;
    #now;
    #insert;
    /** Turns since telemetry last asked, for means over its interval. */
    #pending = [];
    constructor(db, retention, now = Date.now) {
        this.#db = db;
        this.#retention = retention;
        this.#now = now;
        this.#insert =
            db.prepare(`INSERT INTO voice_turns (session_id, turn, started_at, status, transcript, reply,
      speech_ms, asr_ms, ttft_ms, ttfa_ms, asr_rtf, tts_rtf, tokens_per_sec, prompt_tokens, generated_tokens,
      barge_in_ms, error) VALUES (@session_id, @turn, @started_at, @status, @transcript, @reply, @speech_ms,
      @asr_ms, @ttft_ms, @ttfa_ms, @asr_rtf, @tts_rtf, @tokens_per_sec, @prompt_tokens, @generated_tokens,
      @barge_in_ms, @error)`);
    }
    record(turn) {
        const m = turn.metrics;
        const row = {
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
        };
        this.#db.transaction(() => {
            this.#insert.run(row);
            this.prune();
        })();
        this.#pending.push(turn);
        if (this.#pending.length > 1000)
            this.#pending.shift();
    }
    /** Deletes turns beyond the retention limits; returns how many went. */
    prune() {
        const cutoff = this.#now() - this.#retention.maxAgeHours * 3_600_000;
        const byAge = this.#db.prepare('DELETE FROM voice_turns WHERE started_at < ?').run(cutoff).changes;
        const byCount = this.#db
            .prepare('DELETE FROM voice_turns WHERE id NOT IN (SELECT id FROM voice_turns ORDER BY id DESC LIMIT ?)')
            .run(this.#retention.maxTurns).changes;
        return byAge + byCount;
    }
    recent(limit = 50) {
        const rows = this.#db.prepare('SELECT * FROM voice_turns ORDER BY id DESC LIMIT ?').all(limit);
        return rows.map((r) => {
            const metrics = { speechMs: r.speech_ms };
            const set = (k, v) => {
                if (v !== null)
                    metrics[k] = v;
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
            return {
                sessionId: r.session_id,
                turn: r.turn,
                startedAt: r.started_at,
                status: r.status,
                transcript: r.transcript ?? undefined,
                reply: r.reply ?? undefined,
                metrics,
                ...(r.error !== null ? { error: r.error } : {}),
            };
        });
    }
    /**
     * Telemetry's view (WorkloadMetricsProvider): turn counts and the mean of each timing over the turns since the
     * last call. Transcripts never leave through telemetry.
     */
    metrics() {
        const turns = this.#pending;
        this.#pending = [];
        const out = {
            'workload.voice.turns': turns.length,
            'workload.voice.turns_cancelled': turns.filter((t) => t.status === 'cancelled').length,
            'workload.voice.turns_failed': turns.filter((t) => t.status === 'failed').length,
        };
        for (const [key, name] of GAUGES) {
            const values = turns.map((t) => t.metrics[key]).filter((v) => v !== undefined);
            if (values.length > 0)
                out[`workload.voice.${name}`] = values.reduce((a, b) => a + b, 0) / values.length;
        }
        return out;
    }
}
//# sourceMappingURL=turn-store.js.map