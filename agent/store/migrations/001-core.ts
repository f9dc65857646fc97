import type { Migration } from '../../../lib/sqlite/migration.js';

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
