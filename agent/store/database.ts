// The agent's own database: the generic SQLite handling (sqlite/) with every module's migrations
// (migrations/index.ts). Features import the `Db` type from sqlite/ so the store sits below them; only what opens
// the file (main.ts, the CLI commands, tests) comes here.
import { allMigrations } from './migrations/index.js';
import { type Db, type OpenDatabaseOptions, openDatabase } from './sqlite/database.js';
import type { Migration } from './sqlite/migration.js';

export { type Db, KvStore, migrate } from './sqlite/database.js';

export interface OpenStoreOptions extends OpenDatabaseOptions {
  /** Defaults to every module's migrations. */
  migrations?: readonly Migration[];
}

export function openStore(path: string, options: OpenStoreOptions = {}): Db {
  return openDatabase(path, options.migrations ?? allMigrations, options);
}
