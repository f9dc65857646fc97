import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { KvStore, migrate, openStore } from '../../agent/store/database.js';
import { allMigrations } from '../../agent/store/migrations.js';
import type { Migration } from '../../lib/sqlite/migration.js';

const m = (version: number, up: string): Migration => ({ version, name: `m${version}`, up });

test('a file store is in WAL mode with FULL sync and every migration applied once', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'nested', 'agent.db');
  const db = openStore(path);
  t.is(db.pragma('journal_mode', { simple: true }), 'wal');
  t.is(db.pragma('synchronous', { simple: true }), 2);
  const applied = (
    db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]
  ).map((r) => r.version);
  t.deepEqual(
    applied,
    [...allMigrations].map((x) => x.version).sort((a, b) => a - b),
  );
  db.close();
  const again = openStore(path);
  t.deepEqual(migrate(again, allMigrations), []);
  again.close();
});

test('migrations run in version order, skip applied ones, and refuse duplicates', (t) => {
  const db = openStore(':memory:', { migrations: [] });
  t.teardown(() => db.close());
  t.deepEqual(migrate(db, [m(3, 'CREATE TABLE c (x)'), m(1, 'CREATE TABLE a (x)')]), [1, 3]);
  t.deepEqual(migrate(db, [m(1, 'CREATE TABLE a (x)'), m(2, 'CREATE TABLE b (x)'), m(3, '')]), [2]);
  t.throws(() => migrate(db, [m(5, ''), { ...m(5, ''), name: 'again' }]), {
    message: 'Duplicate migration version 5 (again)',
  });
});

test('a failing migration leaves nothing half-applied', (t) => {
  const db = openStore(':memory:', { migrations: [] });
  t.teardown(() => db.close());
  t.throws(() => migrate(db, [m(1, 'CREATE TABLE ok (x); CREATE TABLE broken (')]), {
    any: true,
    message: /incomplete input/,
  });
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE name = 'ok'").all();
  t.deepEqual(tables, []);
  t.deepEqual(db.prepare('SELECT version FROM schema_migrations').all(), []);
});

test('kv values round-trip as JSON and overwrite in place', (t) => {
  const db = openStore(':memory:');
  t.teardown(() => db.close());
  const kv = new KvStore(db);
  t.is(kv.get('missing'), undefined);
  kv.set('k', { a: [1, 2], b: null });
  t.deepEqual(kv.get('k'), { a: [1, 2], b: null });
  kv.set('k', 7);
  t.is(kv.get<number>('k'), 7);
  t.is((db.prepare('SELECT count(*) AS n FROM kv').get() as { n: number }).n, 1);
});

test('a store written by a newer agent is refused, named and left as it was', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'agent.db');
  const newest = Math.max(...allMigrations.map((x) => x.version));
  const newer = openStore(path, {
    migrations: [...allMigrations, m(newest + 1, 'CREATE TABLE from_the_future (x)')],
  });
  newer.prepare("INSERT INTO kv (key, value, updated_at) VALUES ('kept', '1', 0)").run();
  newer.close();
  const err = t.throws(() => openStore(path));
  t.is((err as { code?: string }).code, 'ENEWERDATA');
  t.regex(err.message, new RegExp(`migration ${newest + 1} \\(m${newest + 1}\\).*knows up to ${newest}`));
  t.regex(err.message, /Nothing was changed/);
  const again = openStore(path, {
    migrations: [...allMigrations, m(newest + 1, 'CREATE TABLE from_the_future (x)')],
  });
  t.is(new KvStore(again).get<number>('kept'), 1);
  again.close();
});
