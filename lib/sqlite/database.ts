import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { foreignElfReason } from '../elf.js';
import { MnnEdgeError } from '../errors.js';
import type { Migration } from './migration.js';

export type Db = BetterSqlite3.Database;

// The agent's store opens on the path to READY, so how the package loads counts (bench/startup). As CommonJS:
// an ESM import of it makes Node lex every file of the package for named exports first.
const requireCjs = createRequire(import.meta.url);
const Database = requireCjs('better-sqlite3') as typeof BetterSqlite3;

/** The addon where npm's install builds it; the package's default lookup (`bindings`) walks a stack trace and
 *  probes a dozen paths. Undefined (that lookup) when it sits elsewhere, e.g. a prebuilt one.
 *  MNN_EDGE_SQLITE_ADDON names another build: the one `mnn-edge engine build --target` made for a board. */
function builtAddon(): string | undefined {
  const explicit = process.env['MNN_EDGE_SQLITE_ADDON'];
  const path = explicit
    ? resolve(explicit)
    : join(
        dirname(requireCjs.resolve('better-sqlite3/package.json')),
        'build',
        'Release',
        'better_sqlite3.node',
      );
  if (!existsSync(path)) {
    if (explicit) throw new Error(`MNN_EDGE_SQLITE_ADDON=${explicit}: no such file`);
    return undefined;
  }
  // dlopen of an addon for another CPU says only "wrong ELF class" or "cannot open": name both CPUs instead.
  const foreign = foreignElfReason(path, 'the better-sqlite3 addon');
  if (foreign !== undefined) throw new Error(foreign);
  return path;
}

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
  const rows = db.prepare('SELECT version, name FROM schema_migrations').all() as {
    version: number;
    name: string;
  }[];
  refuseNewerData(db, rows, migrations);
  const applied = new Set(rows.map((r) => r.version));
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

/**
 * A file whose schema went past every migration this build knows was written by a newer agent (a downgrade by
 * git checkout, an older image flashed over a kept data partition). Running on it would read tables whose meaning
 * changed, and the next migration this build adds could collide with the newer one's number, so the agent stops
 * before touching anything and says what to install; the file is left as it was.
 */
function refuseNewerData(
  db: Db,
  rows: readonly { version: number; name: string }[],
  migrations: readonly Migration[],
): void {
  const newest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const unknown = rows.filter((r) => r.version > newest).sort((a, b) => a.version - b.version);
  if (unknown.length === 0) return;
  const listed = unknown.map((r) => `${r.version} (${r.name})`).join(', ');
  throw new MnnEdgeError(
    'ENEWERDATA',
    `${db.name} was written by a newer mnn-edge: it has schema migration${unknown.length > 1 ? 's' : ''} ${listed}, and this version knows up to ${newest}. Nothing was changed; install the newer version again (or move the data directory aside to start afresh).`,
    { path: db.name, newest, unknown: unknown.map((r) => r.version) },
  );
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
