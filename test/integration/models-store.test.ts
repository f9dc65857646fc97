import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ModelCatalog } from '../../models/index.js';
import {
  assertStoreEmpty,
  manifestFor,
  openAt,
  packageEntries,
  scratch,
  TINY,
  TINY_FILES,
  writeArchive,
} from '../helpers/model-store-fixtures.js';
import { modelFixturesDir } from '../helpers/paths.js';

test('imports a bare MNN export directory with a derived manifest, verified and listed', async (t) => {
  const dataDir = scratch(t);
  const { store } = openAt(dataDir);
  const progress: number[] = [];
  store.on('progress', (p) => progress.push(p.bytesDone));
  const pkg = await store.import(TINY, { version: '1.0.0' });
  t.is(pkg.id, 'tiny-llm');
  t.is(pkg.task, 'llm');
  t.true(pkg.derived);
  t.is(pkg.sizeBytes, 521385);
  t.deepEqual(readdirSync(pkg.dir).sort(), ['mnn-edge.json', ...TINY_FILES].sort());
  t.is(readFileSync(join(pkg.dir, 'llm.mnn')).length, 452104);
  t.is(progress.at(-1), 521385);
  t.deepEqual(
    store.list().map((p) => `${p.id}@${p.version}`),
    ['tiny-llm@1.0.0'],
  );
  await t.throwsAsync(store.import(TINY, { version: '1.0.0' }), {
    message: 'tiny-llm@1.0.0 is already installed',
  });
});

test('imports tar and tar.gz packages with a publisher manifest kept byte for byte', async (t) => {
  const dataDir = scratch(t);
  const { store } = openAt(dataDir);
  const m1 = await manifestFor('qwen-tiny', '1.0.0');
  const m2 = await manifestFor('qwen-tiny', '1.1.0');
  await store.import(await writeArchive(join(dataDir, 'a.tar'), packageEntries(m1)));
  const pkg = await store.import(await writeArchive(join(dataDir, 'b.tar.gz'), packageEntries(m2), true));
  t.false(pkg.derived);
  t.is(readFileSync(join(pkg.dir, 'mnn-edge.json'), 'utf8'), JSON.stringify(m2));
  t.deepEqual(pkg.manifest.variants[0]!.configOverrides, { thread_num: 2 });
  t.deepEqual(
    store.list().map((p) => p.version),
    ['1.0.0', '1.1.0'],
  );
});

test('keep, in-use and rollback holds protect versions from rm and gc; gc frees the rest by last use', async (t) => {
  const dataDir = scratch(t);
  let now = 1_000;
  const { store } = openAt(dataDir, { clock: { nowMs: () => now, monotonicMs: () => now } });
  for (const v of ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '2.0.0']) {
    now += 1000;
    await store.import(
      await writeArchive(join(dataDir, `${v}.tar`), packageEntries(await manifestFor('m', v))),
    );
  }
  const ref = (version: string) => ({ id: 'm', version });
  store.keep(ref('1.0.0'));
  store.setInUse([ref('1.1.0')]);
  store.setRollbackHold([ref('1.2.0')]);
  now += 1000;
  store.markUsed(ref('1.3.0'));
  t.throws(() => store.remove(ref('1.1.0')), {
    message: 'm@1.1.0 is in use by the runtime and cannot be removed',
  });
  t.throws(() => store.remove(ref('1.2.0')), {
    message: 'm@1.2.0 is held for an OTA rollback and cannot be removed',
  });
  t.throws(() => store.remove(ref('1.0.0')), {
    message: 'm@1.0.0 is kept by an operator; unkeep it first or force the removal',
  });
  t.throws(() => store.keep(ref('9.9.9')), { message: 'Model m@9.9.9 is not installed' });
  t.throws(() => store.setInUse([ref('9.9.9')]), { message: 'Model m@9.9.9 is not installed' });
  const size = store.get(ref('2.0.0'))!.sizeBytes;
  // A budget that fits all: nothing to do.
  t.deepEqual(store.gc(10 * size).removed, []);
  const report = store.gc(size);
  t.deepEqual(report.removed, [ref('1.3.0')], 'only 1.3.0 is unprotected and not the newest');
  t.is(report.freedBytes, size);
  t.is(report.overBudgetBytes, 3 * size);
  t.false(existsSync(join(dataDir, 'models', 'm', '1.3.0')));
  // The runtime moves on: 1.1.0 is no longer in use, so an unbounded gc collects it.
  store.setInUse([ref('2.0.0')]);
  t.deepEqual(store.gc().removed, [ref('1.1.0')]);
  store.keep(ref('1.0.0'), false);
  store.remove(ref('1.0.0'));
  t.deepEqual(
    store.list().map((p) => [p.version, p.inUse, p.kept, p.rollbackHold]),
    [
      ['1.2.0', false, false, true],
      ['2.0.0', true, false, false],
    ],
  );
  t.deepEqual(readdirSync(join(dataDir, 'models', 'm')).sort(), ['1.2.0', '2.0.0']);
});

test('concurrent imports of one version: one wins, the other is refused and leaves nothing', async (t) => {
  const dataDir = scratch(t);
  const { store } = openAt(dataDir);
  const results = await Promise.allSettled([
    store.import(TINY, { version: '1.0.0' }),
    store.import(TINY, { version: '1.0.0' }),
  ]);
  t.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
  const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  t.regex(
    (rejected.reason as Error).message,
    /^tiny-llm@1\.0\.0 is (being installed by another import|already installed)$/,
  );
  t.deepEqual(
    store.list().map((p) => p.id),
    ['tiny-llm'],
  );
  t.deepEqual(readdirSync(join(dataDir, 'models', '.staging')), []);
  t.deepEqual(readdirSync(join(dataDir, 'models', 'tiny-llm')), ['1.0.0']);
});

test('the catalog lists installed variants, newest first, filtered by task', async (t) => {
  const dataDir = scratch(t);
  const { store } = openAt(dataDir);
  await store.import(TINY, { version: '1.0.0' });
  await store.import(TINY, { version: '1.1.0' });
  await store.import(join(modelFixturesDir, 'tiny-vlm'), { version: '1.0.0' });
  store.setInUse([{ id: 'tiny-llm', version: '1.1.0' }]);
  const catalog = new ModelCatalog(store);
  t.deepEqual(
    catalog.variants({ task: 'llm' }).map((v) => [`${v.ref.id}@${v.ref.version}`, v.variant.name, v.inUse]),
    [
      ['tiny-llm@1.1.0', 'cpu-fp32', true],
      ['tiny-llm@1.0.0', 'cpu-fp32', false],
    ],
  );
  const [vlm] = catalog.variants({ task: 'vlm' });
  t.is(vlm!.dir, join(dataDir, 'models', 'tiny-vlm', '1.0.0'));
  t.deepEqual(vlm!.variant.requirements.engineFeatures, ['llm', 'omni', 'vision']);
  t.is(catalog.packages().length, 3);
});

test('an aborted import stops between files and leaves nothing behind', async (t) => {
  const dataDir = scratch(t);
  const { store } = openAt(dataDir);
  const controller = new AbortController();
  await t.throwsAsync(
    store.import(TINY, {
      signal: controller.signal,
      checkpoint: (step) => {
        if (step === 'staged-file') controller.abort(new Error('operator cancelled'));
      },
    }),
    { message: 'operator cancelled' },
  );
  assertStoreEmpty(t, dataDir, store);
  t.deepEqual(store.list(), []);
});
