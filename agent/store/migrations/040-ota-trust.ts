import type { Migration } from '../sqlite/migration.js';

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
