import type { Migration } from '../sqlite/migration.js';

// Operator side: a staged rollout's plan and each device's progress, so the controller resumes after its own
// restart without re-sending jobs (job ids are derived from rollout id and device, and devices dedupe by job id).
export const otaRolloutsMigration: Migration = {
  version: 42,
  name: 'ota: staged rollouts',
  up: `
    CREATE TABLE ota_rollouts (
      rollout_id TEXT PRIMARY KEY,
      spec TEXT NOT NULL,
      state TEXT NOT NULL,
      phase INTEGER NOT NULL,
      message TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE ota_rollout_devices (
      rollout_id TEXT NOT NULL REFERENCES ota_rollouts (rollout_id),
      device_id TEXT NOT NULL,
      ordinal INTEGER NOT NULL,
      phase INTEGER,
      job_id TEXT,
      state TEXT NOT NULL,
      reason TEXT,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (rollout_id, device_id)
    ) STRICT;
  `,
};
