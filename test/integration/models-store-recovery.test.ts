// The model store after a crash or a power cut: orphans and leftovers cleaned at start, interrupted removals
// finished, a live holder's store left alone, a lock from an earlier boot taken over.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { openAt, scratch, TINY } from '../helpers/model-store-fixtures.js';

test('startup recovery removes orphan directories and staging leftovers and drops rows without files', async (t) => {
  const dataDir = scratch(t);
  {
    const { store, db } = openAt(dataDir);
    await store.import(TINY, { id: 'a', version: '1.0.0' });
    await store.import(TINY, { id: 'b', version: '1.0.0' });
    db.close();
  }
  mkdirSync(join(dataDir, 'models', 'ghost', '0.1.0'), { recursive: true });
  writeFileSync(join(dataDir, 'models', 'ghost', '0.1.0', 'llm.mnn'), 'x');
  mkdirSync(join(dataDir, 'models', '.staging', 'half'));
  writeFileSync(join(dataDir, 'models', 'stray-file'), 'x');
  rmSync(join(dataDir, 'models', 'b', '1.0.0'), { recursive: true });
  const { store, recovery } = openAt(dataDir);
  t.deepEqual(recovery.orphansRemoved.sort(), ['.staging/half', 'ghost/0.1.0', 'stray-file']);
  t.deepEqual(recovery.missingDropped, ['b@1.0.0']);
  t.deepEqual(
    store.list().map((p) => p.id),
    ['a'],
  );
  t.deepEqual(readdirSync(join(dataDir, 'models')).sort(), ['.lock', '.staging', '.trash', 'a']);
});

test('a removal interrupted before or after moving the directory is finished on the next start', async (t) => {
  for (const moved of [false, true]) {
    const dataDir = scratch(t);
    {
      const { store, db } = openAt(dataDir);
      await store.import(TINY, { id: 'a', version: '1.0.0' });
      await store.import(TINY, { id: 'b', version: '1.0.0' });
      // The state remove() leaves between its journal transaction and the end of its file work.
      const trash = join(dataDir, 'models', '.trash', 'interrupted');
      db.transaction(() => {
        db.prepare(
          "INSERT INTO model_journal (work_dir, op, id, version, started_at) VALUES (?, 'remove', 'b', '1.0.0', 0)",
        ).run(trash);
        db.prepare("DELETE FROM model_packages WHERE id = 'b'").run();
      })();
      if (moved) renameSync(join(dataDir, 'models', 'b', '1.0.0'), trash);
      db.close();
    }
    const { store, db, recovery } = openAt(dataDir);
    t.deepEqual(recovery.rolledBack, ['remove b@1.0.0']);
    t.deepEqual(
      store.list().map((p) => p.id),
      ['a'],
    );
    t.deepEqual(readdirSync(join(dataDir, 'models')).sort(), ['.lock', '.staging', '.trash', 'a']);
    t.deepEqual(readdirSync(join(dataDir, 'models', '.trash')), []);
    t.deepEqual(db.prepare('SELECT * FROM model_journal').all(), []);
    db.close();
  }
});

test('a store held by another live process is not recovered from under it; a dead holder is taken over', async (t) => {
  const dataDir = scratch(t);
  {
    const { store, db } = openAt(dataDir);
    store.close();
    db.close();
  }
  const half = join(dataDir, 'models', '.staging', 'in-progress-elsewhere');
  mkdirSync(half);
  // The parent process (the test runner) is alive: stands in for the agent importing while the CLI runs.
  writeFileSync(join(dataDir, 'models', '.lock'), `${process.ppid}\n`);
  const live = openAt(dataDir);
  t.is(live.recovery.skipped, `held by process ${process.ppid}`);
  t.true(existsSync(half));
  live.store.close();
  t.is(
    readFileSync(join(dataDir, 'models', '.lock'), 'utf8'),
    `${process.ppid}\n`,
    'close() leaves a foreign lock',
  );
  live.db.close();
  // A pid that cannot be alive: the holder died (kill -9), so the next opener recovers.
  writeFileSync(join(dataDir, 'models', '.lock'), '2147483646\n');
  const next = openAt(dataDir);
  t.is(next.recovery.skipped, undefined);
  t.deepEqual(next.recovery.orphansRemoved, ['.staging/in-progress-elsewhere']);
  t.is(readFileSync(join(dataDir, 'models', '.lock'), 'utf8').split('\n')[0], `${process.pid}`);
  next.store.close();
  t.false(existsSync(join(dataDir, 'models', '.lock')));
  next.db.close();
});

test('a lock from an earlier boot is free whatever process has its pid now: recovery runs after a power cut', (t) => {
  const dataDir = scratch(t);
  {
    const { store, db } = openAt(dataDir);
    store.close();
    db.close();
  }
  const lock = join(dataDir, 'models', '.lock');
  const half = join(dataDir, 'models', '.staging', 'left-by-the-cut');
  mkdirSync(half);
  // The agent of the boot before the cut held the store; in this boot its pid belongs to a live process.
  writeFileSync(lock, `${process.ppid}\nboot-before-the-cut\n`);
  const after = openAt(dataDir, { bootId: 'boot-after-the-cut' });
  t.is(after.recovery.skipped, undefined);
  t.deepEqual(after.recovery.orphansRemoved, ['.staging/left-by-the-cut']);
  t.is(readFileSync(lock, 'utf8'), `${process.pid}\nboot-after-the-cut\n`);
  after.store.close();
  after.db.close();
  // The same live pid in this boot still holds it.
  writeFileSync(lock, `${process.ppid}\nboot-after-the-cut\n`);
  const held = openAt(dataDir, { bootId: 'boot-after-the-cut' });
  t.is(held.recovery.skipped, `held by process ${process.ppid}`);
  held.store.close();
  held.db.close();
});
