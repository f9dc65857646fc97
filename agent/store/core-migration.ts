import type { Migration } from '../../lib/sqlite/migration.js';

// The store's own table: key-value state (version 1, applied on devices from agent/store/migrations/001).
export const coreMigration: Migration = {
  version: 1,
  name: 'core: key-value state',
  up: `
    CREATE TABLE kv (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
  `,
};
