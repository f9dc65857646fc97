// The agent's own database: the generic SQLite handling (sqlite/) with every feature's migrations
// (migrations.ts). Features import the `Db` type from sqlite/ so the store sits below them; only what opens
// the file (main.ts, the CLI commands, tests) comes here.

import { type Db, type OpenDatabaseOptions, openDatabase } from '../../lib/sqlite/database.js';
import type { Migration } from '../../lib/sqlite/migration.js';
import { allMigrations } from './migrations.js';

export { type Db, KvStore, migrate } from '../../lib/sqlite/database.js';

export interface OpenStoreOptions extends OpenDatabaseOptions {
  /** Defaults to every module's migrations. */
  migrations?: readonly Migration[];
}

export function openStore(path: string, options: OpenStoreOptions = {}): Db {
  return openDatabase(path, options.migrations ?? allMigrations, options);
}
