import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Migration } from './migration.js';

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  /** `synchronous` level: FULL survives power loss for every commit; NORMAL (default in WAL) may lose the last
   *  transactions on power cut but never corrupts. */
  synchronous?: 'FULL' | 'NORMAL';
  readonly?: boolean;
}

/** Opens (creating its folder) a SQLite file in WAL mode and applies the migrations it has not seen yet. */
export function openDatabase(
  path: string,
  migrations: readonly Migration[],
  options: OpenDatabaseOptions = {},
): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { readonly: options.readonly ?? false });
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  }
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  if (!options.readonly) migrate(db, migrations);
  return db;
}

export function migrate(db: Db, migrations: readonly Migration[]): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const seen = new Set<number>();
  for (const m of migrations) {
    if (seen.has(m.version)) throw new Error(`Duplicate migration version ${m.version} (${m.name})`);
    seen.add(m.version);
  }
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  const done: number[] = [];
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (const m of sorted) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.up);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
    })();
    done.push(m.version);
  }
  return done;
}

export class KvStore {
  readonly #get;
  readonly #set;
  constructor(db: Db) {
    this.#get = db.prepare('SELECT value FROM kv WHERE key = ?');
    this.#set = db.prepare(
      'INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    );
  }
  get<T>(key: string): T | undefined {
    const row = this.#get.get(key) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }
  set(key: string, value: unknown): void {
    this.#set.run(key, JSON.stringify(value), Date.now());
  }
}
