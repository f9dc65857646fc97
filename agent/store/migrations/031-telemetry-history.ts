import type { Migration } from '../../../lib/sqlite/migration.js';

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
