// The agent's own database: the generic SQLite handling (sqlite/) with every module's migrations
// (migrations/index.ts). Features import the `Db` type from sqlite/ so the store sits below them; only what opens
// the file (main.ts, the CLI commands, tests) comes here.
import { allMigrations } from './migrations/index.js';
import { openDatabase } from './sqlite/database.js';
export { KvStore, migrate } from './sqlite/database.js';
export function openStore(path, options = {}) {
    return openDatabase(path, options.migrations ?? allMigrations, options);
}
//# sourceMappingURL=database.js.map