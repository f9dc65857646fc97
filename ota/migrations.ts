import type { Migration } from '../lib/sqlite/migration.js';

// OTA's schema changes, beside the feature as the other modules' are (agent/store/migrations.ts lists them
// all). The versions are the ones devices have applied since they lived in agent/store/migrations/040-043 (and 047): a
// version never changes and an applied migration is never edited (test/integration/ota-migrations.test.ts opens a
// database made before the move). Append with the next free number of OTA's range, 40-49.

// Anti-rollback state: the one targets document the device trusts now (a single row).
export const otaTrustMigration: Migration = {
  version: 40,
  name: 'ota: last trusted targets',
  up: `
    CREATE TABLE ota_trust (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      digest TEXT NOT NULL,
      expires_ms INTEGER NOT NULL,
      document TEXT NOT NULL,
      accepted_at INTEGER NOT NULL
    ) STRICT;
  `,
};

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

// The root of trust the device holds now (a single row): the signed root document that names the targets keys.
// It changes only together with the targets anti-rollback state, in one transaction.
export const otaRootMigration: Migration = {
  version: 43,
  name: 'ota: trusted root document',
  up: `
    CREATE TABLE ota_root (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      digest TEXT NOT NULL,
      expires_ms INTEGER NOT NULL,
      document TEXT NOT NULL,
      accepted_at INTEGER NOT NULL
    ) STRICT;
  `,
};

// Rollouts at fleet size: per device the attempt (retries of transient failures get a new job id), when its job
// went out (job timeouts, the rate limit) and when a retry is due; per rollout the abort decision's numbers.
export const otaRolloutPacingMigration: Migration = {
  version: 47,
  name: 'ota: rollout timeouts, retries and rate',
  up: `
    ALTER TABLE ota_rollout_devices ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE ota_rollout_devices ADD COLUMN sent_at INTEGER;
    ALTER TABLE ota_rollout_devices ADD COLUMN retry_at INTEGER;
    ALTER TABLE ota_rollouts ADD COLUMN decision TEXT;
    CREATE INDEX ota_rollout_devices_sent ON ota_rollout_devices (rollout_id, sent_at);
  `,
};

// The job state that runs the installer was called `verifying`; it is `installing` now (issue 44: the
// signatures are checked in `queued`, and this step unpacks, verifies the files and installs). The journal's
// unfinished job resumes by its stored state, so the rows are rewritten, on the device (ota_jobs) and on the
// operator's side (ota_rollout_devices keeps each device's last reported state). The wire keeps `verifying`
// (ota/jobs/job.ts, WIRE_JOB_STATES).
export const otaInstallingStateMigration: Migration = {
  version: 48,
  name: 'ota: job state verifying is installing',
  up: `
    UPDATE ota_jobs SET state = 'installing' WHERE state = 'verifying';
    UPDATE ota_rollout_devices SET state = 'installing' WHERE state = 'verifying';
  `,
};

export const otaMigrations: readonly Migration[] = [
  otaTrustMigration,
  otaJobsMigration,
  otaRolloutsMigration,
  otaRootMigration,
  otaRolloutPacingMigration,
  otaInstallingStateMigration,
];
