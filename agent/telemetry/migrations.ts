import type { Migration } from '../../lib/sqlite/migration.js';

// Telemetry's schema changes, beside the feature (agent/store/migrations.ts lists every feature's). Versions 30
// and 31 as devices applied them when they lived in agent/store/migrations/030-031; never edited.

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

// Downsampled metrics for the dashboard's charts: one row per (metric, bucket), bounded by retention.
export const telemetryHistoryMigration: Migration = {
  version: 31,
  name: 'telemetry: downsampled history',
  up: `
    CREATE TABLE telemetry_history (
      metric TEXT NOT NULL,
      bucket_start INTEGER NOT NULL,
      count INTEGER NOT NULL,
      min REAL NOT NULL,
      max REAL NOT NULL,
      sum REAL NOT NULL,
      PRIMARY KEY (metric, bucket_start)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX telemetry_history_time ON telemetry_history (bucket_start);
  `,
};

export const telemetryMigrations: readonly Migration[] = [
  telemetryOutboxMigration,
  telemetryHistoryMigration,
];
