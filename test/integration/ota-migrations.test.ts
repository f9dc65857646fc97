// OTA's migrations moved from agent/store/migrations/040-043 to ota/migrations.ts with the same versions. A
// device's database made by the code before the move (test/fixtures/agent-db-a6a831b.sql: every migration of
// commit a6a831b applied, a job mid-download in the journal, a health record) must open with today's code without
// any of its migrations running again, keep its rows, and have the very schema a fresh database gets.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type BetterSqlite3 from 'better-sqlite3';
import { openStore } from '../../agent/store/database.js';
import { JobJournal } from '../../ota/jobs/journal.js';
import { otaMigrations } from '../../ota/migrations.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const fixture = readFileSync(new URL('../fixtures/agent-db-a6a831b.sql', import.meta.url), 'utf8');
const FIXTURE_APPLIED_AT = 1764640000000;

interface SchemaRow {
  name: string;
  sql: string;
}
const schemaOf = (db: BetterSqlite3.Database): Map<string, string> =>
  new Map(
    (
      db
        .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")
        .all() as SchemaRow[]
    ).map((r) => [r.name, r.sql.replace(/\s+/g, ' ').trim()]),
  );

/** A device's database as the code of commit a6a831b left it, in a folder removed after the test; still open. */
function databaseBeforeTheMove(t: ExecutionContext) {
  const dir = mkdtempSync(join(tmpdir(), 'ota-migrations-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'agent.db');
  const before = new Database(path);
  before.exec(fixture);
  return { dir, path, before };
}

test('a database made before the move opens cleanly: no migration runs twice, rows and schema are intact', (t) => {
  const { dir, path, before } = databaseBeforeTheMove(t);
  const oldSchema = schemaOf(before);
  const oldApplied = before.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
  before.close();

  const db = openStore(path);
  t.teardown(() => db.close());
  const rows = db
    .prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version')
    .all() as {
    version: number;
    name: string;
    applied_at: number;
  }[];
  // Every migration the old code applied is still recorded once, with its old name and time: none ran again.
  const kept = rows
    .filter((r) => r.applied_at === FIXTURE_APPLIED_AT)
    .map(({ version, name }) => ({ version, name }));
  t.deepEqual(kept, oldApplied);
  // What ran now is only what did not exist then (migrations added since, by any module).
  const oldVersions = new Set((oldApplied as { version: number }[]).map((r) => r.version));
  t.true(rows.every((r) => r.applied_at === FIXTURE_APPLIED_AT || !oldVersions.has(r.version)));

  // The OTA rows the old code wrote read back through today's code.
  const journal = new JobJournal(db);
  const entry = journal.get('job-before-30');
  t.is(entry?.state, 'downloading');
  t.is(entry?.bytesDone, 1024);
  t.deepEqual(journal.healthOf('tiny-llm', '1.0.0'), { ttftMs: 120, decodeTokensPerSecond: 42.5 });

  // OTA's tables and indexes as the old code made them are the ones a fresh database gets today (other modules'
  // tables may have grown since, by their own later migrations).
  const fresh = openStore(join(dir, 'fresh.db'));
  t.teardown(() => fresh.close());
  const newSchema = schemaOf(fresh);
  const ota = [...oldSchema].filter(([name]) => name.startsWith('ota_'));
  t.deepEqual(ota.map(([name]) => name).sort(), [
    'ota_health',
    'ota_jobs',
    'ota_jobs_state',
    'ota_rollout_devices',
    'ota_rollouts',
    'ota_root',
    'ota_trust',
  ]);
  // Every column the old code made is still there, the same (later OTA migrations, as 47, may add columns).
  const columns = (d: BetterSqlite3.Database, table: string) =>
    d.prepare(`PRAGMA table_info(${table})`).all() as {
      name: string;
      type: string;
      notnull: number;
      pk: number;
    }[];
  const check = new Database(path, { readonly: true });
  t.teardown(() => check.close());
  for (const [name, sql] of ota) {
    if (!sql.startsWith('CREATE TABLE')) {
      t.is(newSchema.get(name), sql, name);
      continue;
    }
    const now = columns(fresh, name);
    for (const c of columns(check, name))
      t.deepEqual(
        now.find((n) => n.name === c.name),
        c,
        `${name}.${c.name}`,
      );
  }
  t.is(db.prepare('SELECT COUNT(*) AS n FROM ota_jobs').pluck().get(), 1);
});

test("OTA's migrations keep the versions and names devices have applied (40-43)", (t) => {
  const applied = [...fixture.matchAll(/VALUES \((4\d), '([^']*)'/g)].map((m) => ({
    version: Number(m[1]),
    name: m[2],
  }));
  t.deepEqual(
    otaMigrations.filter((m) => m.version <= 43).map(({ version, name }) => ({ version, name })),
    applied,
  );
  t.deepEqual(
    applied.map((a) => a.version),
    [40, 41, 42, 43],
  );
});

test('migration 48: a job journalled as verifying (the old name of the install step) resumes as installing', (t) => {
  const { path, before } = databaseBeforeTheMove(t);
  // As the code before issue 44 left it: the device's job mid-install, and an operator's rollout row that
  // recorded a device's last reported state.
  before.exec(`
    UPDATE ota_jobs SET state = 'verifying' WHERE job_id = 'job-before-30';
    INSERT INTO ota_rollouts (rollout_id, spec, state, phase, message, created_at, updated_at)
      VALUES ('r-old', '{}', 'running', 0, NULL, ${FIXTURE_APPLIED_AT}, ${FIXTURE_APPLIED_AT});
    INSERT INTO ota_rollout_devices (rollout_id, device_id, ordinal, phase, job_id, state, reason, updated_at)
      VALUES ('r-old', 'dev-1', 0, 0, 'r-old.dev-1', 'verifying', NULL, ${FIXTURE_APPLIED_AT});
  `);
  before.close();

  const db = openStore(path);
  t.teardown(() => db.close());
  t.is(new JobJournal(db).get('job-before-30')?.state, 'installing');
  t.is(
    db.prepare("SELECT state FROM ota_rollout_devices WHERE rollout_id = 'r-old'").pluck().get(),
    'installing',
  );
  t.is(db.prepare("SELECT COUNT(*) FROM ota_jobs WHERE state = 'verifying'").pluck().get(), 0);
});
