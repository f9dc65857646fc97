import type { Migration } from '../sqlite/migration.js';

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
