import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import test from 'ava';
import { KvStore, openStore } from '../../agent/store/database.js';
import { ModelStore, writeTar } from '../../models/index.js';
import { ModelStoreInstaller, StoreActivation } from '../../ota/jobs/store-adapter.js';
import { packModel } from '../../ota/tools/pack.js';
import { OtaRejection } from '../../ota/trust/rejection.js';
import { modelFixturesDir } from '../helpers/paths.js';

const tinyLlm = join(modelFixturesDir, 'tiny-llm');

function setup(t: { teardown(fn: () => void): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'ota-pack-'));
  const db = openStore(join(dir, 'agent.db'));
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { store } = ModelStore.open({ dataDir: join(dir, 'data'), db });
  const out = join(dir, 'out');
  mkdirSync(out);
  return { dir, db, store, out };
}

test('pack derives the manifest, is reproducible, and installs into the real ModelStore', async (t) => {
  const { store, out, dir } = setup(t);
  const a = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: out });
  t.is(a.artifact.name, 'tiny-llm-1.0.0-cpu-fp32.tar');
  t.is(a.artifact.variant, 'cpu-fp32');
  const out2 = join(dir, 'out2');
  mkdirSync(out2);
  const b = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: out2 });
  t.is(b.artifact.sha256, a.artifact.sha256);
  const installer = new ModelStoreInstaller(store);
  await installer.install(a.tarball, { id: 'tiny-llm', version: '1.0.0' });
  // Idempotent: a second install of the same version is a no-op.
  await installer.install(a.tarball, { id: 'tiny-llm', version: '1.0.0' });
  const pkg = store.get({ id: 'tiny-llm', version: '1.0.0' })!;
  t.deepEqual(readFileSync(join(pkg.dir, 'llm.mnn')), readFileSync(join(tinyLlm, 'llm.mnn')));
});

test('a package whose manifest names another version is refused before it is published', async (t) => {
  const { store, out } = setup(t);
  const a = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: out });
  const err = await t.throwsAsync(
    new ModelStoreInstaller(store).install(a.tarball, { id: 'tiny-llm', version: '2.0.0' }),
    {
      instanceOf: OtaRejection,
    },
  );
  t.is(err?.reason, 'manifest-mismatch');
  t.is(err?.message, 'Package manifest says tiny-llm@1.0.0, but the signed targets name tiny-llm@2.0.0');
  t.deepEqual(store.list(), []);
});

test('a traversal entry is refused by the archive checks, nothing installed', async (t) => {
  const { store, out } = setup(t);
  const { manifest } = await packModel(tinyLlm, { id: 'tiny-llm', version: '1.0.0', outDir: out });
  const evil = join(out, 'evil.tar');
  await pipeline(
    writeTar([
      { path: 'mnn-edge.json', data: Buffer.from(JSON.stringify(manifest)) },
      { path: '../../etc/evil', data: Buffer.from('x') },
    ]),
    createWriteStream(evil),
  );
  const err = await t.throwsAsync(
    new ModelStoreInstaller(store).install(evil, { id: 'tiny-llm', version: '1.0.0' }),
    {
      instanceOf: OtaRejection,
    },
  );
  t.is(err?.reason, 'unsafe-archive');
  t.is(err?.message, 'entry "../../etc/evil" has a path that leaves the package (..)');
  t.deepEqual(store.list(), []);
});

test('StoreActivation keeps active and rollback versions out of GC until commit', async (t) => {
  const { store, out, db } = setup(t);
  const installer = new ModelStoreInstaller(store);
  for (const v of ['1.0.0', '2.0.0']) {
    const p = await packModel(tinyLlm, { id: 'tiny-llm', version: v, outDir: out });
    await installer.install(p.tarball, { id: 'tiny-llm', version: v });
  }
  const act = new StoreActivation(store, new KvStore(db));
  await act.activate('tiny-llm', '1.0.0');
  await act.activate('tiny-llm', '2.0.0');
  t.is(await act.activeVersion('tiny-llm'), '2.0.0');
  t.true(store.get({ id: 'tiny-llm', version: '1.0.0' })!.rollbackHold);
  t.deepEqual(store.gc().removed, []);
  await act.commit('tiny-llm', '2.0.0');
  t.false(store.get({ id: 'tiny-llm', version: '1.0.0' })!.rollbackHold);
  t.true(store.get({ id: 'tiny-llm', version: '2.0.0' })!.inUse);
  await t.throwsAsync(act.activate('tiny-llm', '3.0.0'), {
    message: 'Cannot activate tiny-llm@3.0.0: it is not installed',
  });
});
