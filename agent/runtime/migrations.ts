import type { Migration } from '../../lib/sqlite/migration.js';

// The desired-state document: one row per (source, subject); the column keeps the name `layer` it had before the
// word was left to the architecture (applied on devices, never edited). Subjects are slot names, `model:<id>` for
// the OTA source (a job sets the version of a model, whichever slots use it) and `placement` for the planner's output.
export const runtimeDesiredMigration: Migration = {
  version: 20,
  name: 'runtime: desired-state layers',
  up: `
    CREATE TABLE runtime_desired (
      layer TEXT NOT NULL CHECK (layer IN ('config', 'planner', 'operator', 'ota')),
      subject TEXT NOT NULL,
      doc TEXT NOT NULL,
      author TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (layer, subject)
    ) STRICT;
    CREATE TABLE runtime_revision (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      revision INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    INSERT INTO runtime_revision (id, revision, updated_at) VALUES (1, 0, 0);
  `,
};

// The bench cache: the latest probe per (model version, variant, backend config, engine version, board).
export const runtimeProbesMigration: Migration = {
  version: 21,
  name: 'runtime: measured probe results',
  up: `
    CREATE TABLE runtime_probes (
      model_id TEXT NOT NULL,
      version TEXT NOT NULL,
      variant_id TEXT NOT NULL,
      config TEXT NOT NULL,
      engine_version TEXT NOT NULL,
      board_id TEXT NOT NULL,
      ok INTEGER NOT NULL,
      load_ms REAL NOT NULL,
      prefill_tok_s REAL NOT NULL,
      decode_tok_s REAL NOT NULL,
      peak_rss_bytes INTEGER NOT NULL,
      measured_at INTEGER NOT NULL,
      error TEXT,
      PRIMARY KEY (model_id, version, variant_id, config, engine_version, board_id)
    ) STRICT;
  `,
};

export const runtimeMigrations: readonly Migration[] = [runtimeDesiredMigration, runtimeProbesMigration];
