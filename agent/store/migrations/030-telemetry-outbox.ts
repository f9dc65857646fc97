import type { Migration } from '../../../lib/sqlite/migration.js';

// Store-and-forward: a message lives here from before its first publish until its PUBACK (or its expiry).
// `seq` is the per-device sequence number carried in the payload, so consumers can detect gaps and duplicates.
export const telemetryOutboxMigration: Migration = {
  version: 30,
  name: 'telemetry: outbox and counters',
  up: `
    CREATE TABLE telemetry_outbox (
      seq INTEGER PRIMARY KEY,
      topic TEXT NOT NULL,
      payload BLOB NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX telemetry_outbox_expires ON telemetry_outbox (expires_at);
    CREATE TABLE telemetry_counters (
      name TEXT PRIMARY KEY,
      value INTEGER NOT NULL
    ) STRICT;
  `,
};
