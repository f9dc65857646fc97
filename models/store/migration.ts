import type { Migration } from '../../lib/sqlite/migration.js';

// Inventory of installed model packages, and the journal that makes installs and removals crash-safe:
// a journal row is committed before any file is touched and deleted in the same transaction that
// publishes (or retracts) the package row, so startup recovery knows exactly what to undo.
export const modelsMigration: Migration = {
  version: 10,
  name: 'models: package inventory and install journal',
  up: `
    CREATE TABLE model_packages (
      id TEXT NOT NULL,
      version TEXT NOT NULL,
      task TEXT NOT NULL,
      manifest TEXT NOT NULL,
      derived INTEGER NOT NULL,
      size_bytes INTEGER NOT NULL,
      installed_at INTEGER NOT NULL,
      last_used_at INTEGER,
      in_use INTEGER NOT NULL DEFAULT 0,
      kept INTEGER NOT NULL DEFAULT 0,
      rollback_hold INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (id, version)
    ) STRICT;
    CREATE TABLE model_journal (
      work_dir TEXT PRIMARY KEY,
      op TEXT NOT NULL CHECK (op IN ('install', 'remove')),
      id TEXT,
      version TEXT,
      started_at INTEGER NOT NULL
    ) STRICT;
  `,
};
