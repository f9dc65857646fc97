import type { Migration } from '../sqlite/migration.js';

// The device's OTA journal: one row per job id (which makes jobs idempotent), its state and progress, written
// before each step so that a restart resumes where the power cut left it. ota_health keeps each version's
// measured health figures, the baseline that the next version's gate compares against.
export const otaJobsMigration: Migration = {
  version: 41,
  name: 'ota: job journal and health figures',
  up: `
    CREATE TABLE ota_jobs (
      job_id TEXT PRIMARY KEY,
      seq INTEGER NOT NULL,
      state TEXT NOT NULL,
      reason TEXT,
      message TEXT,
      package_id TEXT NOT NULL,
      package_version TEXT NOT NULL,
      artifact TEXT,
      url TEXT,
      bytes_done INTEGER NOT NULL DEFAULT 0,
      bytes_total INTEGER,
      previous_version TEXT,
      attempts INTEGER NOT NULL DEFAULT 0,
      measurements TEXT,
      job TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX ota_jobs_state ON ota_jobs (state, seq);
    CREATE TABLE ota_health (
      model_id TEXT NOT NULL,
      version TEXT NOT NULL,
      ttft_ms REAL NOT NULL,
      decode_tps REAL NOT NULL,
      measured_at INTEGER NOT NULL,
      PRIMARY KEY (model_id, version)
    ) STRICT;
  `,
};
