import type { Migration } from '../../../lib/sqlite/migration.js';

// One row per voice turn: its timings and the transcript. Transcripts are personal data, so the store keeps
// them only within the configured retention (age and count) and the sweep deletes older rows.
export const voiceTurnsMigration: Migration = {
  version: 50,
  name: 'workloads: voice turns',
  up: `
    CREATE TABLE voice_turns (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL,
      turn INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('completed', 'cancelled', 'failed')),
      transcript TEXT,
      reply TEXT,
      speech_ms REAL NOT NULL,
      asr_ms REAL,
      ttft_ms REAL,
      ttfa_ms REAL,
      asr_rtf REAL,
      tts_rtf REAL,
      tokens_per_sec REAL,
      prompt_tokens INTEGER,
      generated_tokens INTEGER,
      barge_in_ms REAL,
      error TEXT
    ) STRICT;
    CREATE INDEX voice_turns_time ON voice_turns (started_at);
  `,
};

// The parts of a turn's latency budget (VAD decision, LLM TTFT, first sentence, first TTS chunk, our hand-overs)
// and what the engine did with the conversation's KV.
export const voiceTurnPartsMigration: Migration = {
  version: 51,
  name: 'workloads: voice turn latency parts and KV reuse',
  up: `
    ALTER TABLE voice_turns ADD COLUMN vad_end_ms REAL;
    ALTER TABLE voice_turns ADD COLUMN llm_ttft_ms REAL;
    ALTER TABLE voice_turns ADD COLUMN sentence_ms REAL;
    ALTER TABLE voice_turns ADD COLUMN tts_first_ms REAL;
    ALTER TABLE voice_turns ADD COLUMN handover_ms REAL;
    ALTER TABLE voice_turns ADD COLUMN kv_reused_tokens INTEGER;
    ALTER TABLE voice_turns ADD COLUMN kv_reuse TEXT;
  `,
};

// The tool calls of a turn the acting assistant answered (agent/workloads/tools), as JSON: name, arguments,
// outcome, result and duration of each, for the Voice page's turn details. Kept and swept with the turn.
export const voiceTurnToolCallsMigration: Migration = {
  version: 56,
  name: 'workloads: voice turn tool calls',
  up: `
    ALTER TABLE voice_turns ADD COLUMN tool_calls TEXT;
  `,
};
