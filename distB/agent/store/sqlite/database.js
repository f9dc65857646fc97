import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
// The agent's store opens on the path to READY, so how the package loads counts (bench/startup). As CommonJS:
// an ESM import of it makes Node lex every file of the package for named exports first.
const requireCjs = createRequire(import.meta.url);
const Database = requireCjs('better-sqlite3');
/** The addon where npm's install builds it; the package's default lookup (`bindings`) walks a stack trace and
 *  probes a dozen paths. Undefined (that lookup) when it sits elsewhere, e.g. a prebuilt one. */
function builtAddon() {
    const path = join(dirname(requireCjs.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
    return existsSync(path) ? path : undefined;
}
/** Opens (creating its folder) a SQLite file in WAL mode and applies the migrations it has not seen yet. */
export function openDatabase(path, migrations, options = {}) {
    if (path !== ':memory:')
        mkdirSync(dirname(path), { recursive: true });
    const nativeBinding = builtAddon();
    const db = new Database(path, {
        readonly: options.readonly ?? false,
        ...(nativeBinding ? { nativeBinding } : {}),
    });
    if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    }
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    if (!options.readonly)
        migrate(db, migrations);
    return db;
}
export function migrate(db, migrations) {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
    const seen = new Set();
    for (const m of migrations) {
        if (seen.has(m.version))
            throw new Error(`Duplicate migration version ${m.version} (${m.name})`);
        seen.add(m.version);
    }
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').all().map((r) => r.version));
    const done = [];
    const sorted = [...migrations].sort((a, b) => a.version - b.version);
    for (const m of sorted) {
        if (applied.has(m.version))
            continue;
        db.transaction(() => {
            db.exec(m.up);
            db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
        })();
        done.push(m.version);
    }
    return done;
}
export class KvStore {
    #get;
    #set;
    constructor(db) {
        this.#get = db.prepare('SELECT value FROM kv WHERE key = ?');
        this.#set = db.prepare('INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at');
    }
    get(key) {
        const row = this.#get.get(key);
        return row ? JSON.parse(row.value) : undefined;
    }
    set(key, value) {
        this.#set.run(key, JSON.stringify(value), Date.now());
    }
}
//# sourceMappingURL=database.js.map