import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import { openStore } from '../../agent/store/database.js';
import {
  hashFile,
  ModelCatalog,
  type ModelManifest,
  ModelStore,
  type ModelStoreOptions,
  type TarWriteEntry,
  writeTar,
} from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';

const TINY = join(modelFixturesDir, 'tiny-llm');
const TINY_FILES = [
  'config.json',
  'embeddings_bf16.bin',
  'llm.mnn',
  'llm.mnn.weight',
  'llm_config.json',
  'tokenizer.txt',
];

function scratch(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'models-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function openAt(dataDir: string, extra: Partial<ModelStoreOptions> = {}) {
  const db = openStore(join(dataDir, 'agent.db'));
  const { store, recovery } = ModelStore.open({ dataDir, db, ...extra });
  return { store, recovery, db };
}

async function manifestFor(id: string, version: string): Promise<ModelManifest> {
  const files = await Promise.all(
    TINY_FILES.map(async (path) => ({ path, ...(await hashFile(join(TINY, path))) })),
  );
  return {
    schemaVersion: 1,
    id,
    version,
    task: 'llm',
    license: 'Apache-2.0',
    variants: [
      {
        name: 'cpu-fp32',
        requirements: { backend: 'cpu', engineFeatures: ['llm'], minRamBytes: 64 * 1024 * 1024 },
        precision: { weights: 'fp32', activations: 'fp32' },
        files,
        memory: { weightsBytes: 517640, kvCacheBytes: 1048576, contextLength: 2048 },
        configOverrides: { thread_num: 2 },
      },
    ],
  };
}

function packageEntries(manifest: unknown): TarWriteEntry[] {
  return [
    { path: 'mnn-edge.json', data: Buffer.from(JSON.stringify(manifest)) },
    ...TINY_FILES.map((f) => ({ path: f, data: readFileSync(join(TINY, f)) })),
  ];
}

async function writeArchive(path: string, entries: TarWriteEntry[], gzip = false): Promise<string> {
  const source = Readable.from(writeTar(entries));
  if (gzip) await pipeline(source, createGzip(), createWriteStream(path));
  else await pipeline(source, createWriteStream(path));
  return path;
}

function assertStoreEmpty(t: ExecutionContext, dataDir: string, store: ModelStore): void {
  t.deepEqual(store.list(), []);
  t.deepEqual(readdirSync(join(dataDir, 'models')).sort(), ['.lock', '.staging', '.trash']);
  t.deepEqual(readdirSync(join(dataDir, 'models', '.staging')), []);
}

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

interface BadCase {
  title: string;
  entries: () => Promise<TarWriteEntry[]>;
  message: string | RegExp;
  maxEntryBytes?: number;
}

const bad: BadCase[] = [
  {
    title: 'path traversal',
    entries: async () => [
      ...packageEntries(await manifestFor('x', '1.0.0')),
      { path: '../evil.sh', data: Buffer.from('x') },
    ],
    message: 'entry "../evil.sh" has a path that leaves the package (..)',
  },
  {
    title: 'absolute path',
    entries: async () => [{ path: '/etc/cron.d/evil', data: Buffer.from('x') }],
    message: 'entry "/etc/cron.d/evil" has an absolute path',
  },
  {
    title: 'symlink leaving the package',
    entries: async () => [{ path: 'llm.mnn', type: 'symlink', linkTarget: '../../../etc/shadow' }],
    message: 'symlink "llm.mnn" points outside the package ("../../../etc/shadow")',
  },
  {
    title: 'hardlink leaving the package',
    entries: async () => [{ path: 'llm.mnn', type: 'hardlink', linkTarget: '/etc/shadow' }],
    message: 'hardlink "llm.mnn" points outside the package ("/etc/shadow")',
  },
  {
    title: 'symlink to nothing in the package',
    entries: async () => [{ path: 'llm.mnn', type: 'symlink', linkTarget: 'missing.bin' }],
    message: 'symlink "llm.mnn" points to "missing.bin", which is not a file in the package',
  },
  {
    title: 'character device',
    entries: async () => [{ path: 'dev/mem', type: 'char-device' }],
    message: 'entry "dev/mem" is a char-device, which a package must not contain',
  },
  {
    title: 'fifo',
    entries: async () => [{ path: 'pipe', type: 'fifo' }],
    message: 'entry "pipe" is a fifo, which a package must not contain',
  },
  {
    title: 'entry over the size limit',
    entries: async () => [{ path: 'huge.bin', data: Buffer.alloc(3000) }],
    message: 'entry "huge.bin" is 3000 bytes, over the limit of 2048',
    maxEntryBytes: 2048,
  },
  {
    title: 'duplicate entry',
    entries: async () => [
      { path: 'a.bin', data: Buffer.from('1') },
      { path: './a.bin', data: Buffer.from('2') },
    ],
    message: 'entry "./a.bin" appears twice in the archive',
  },
  {
    title: 'a file path running through another file',
    entries: async () => [
      { path: 'llm.mnn', data: Buffer.from('1') },
      { path: 'llm.mnn/inner', data: Buffer.from('2') },
    ],
    message: 'entry "llm.mnn/inner" collides with another entry\'s path',
  },
  {
    title: 'manifest failing the schema',
    entries: async () =>
      packageEntries({ ...(await manifestFor('x', '1.0.0')), version: 'latest', task: 'chat' }),
    message:
      'Invalid manifest mnn-edge.json: version: expected a string matching /^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$/, got "latest"; task: expected one of "llm", "vlm", "omni", "asr", "tts", "vad", "wake", "vision", "embedding", got "chat"',
  },
  {
    title: 'manifest that is not JSON',
    entries: async () => [{ path: 'mnn-edge.json', data: Buffer.from('{"id": ') }],
    message: /^Invalid manifest mnn-edge\.json: not valid JSON \(/,
  },
  {
    title: 'hash mismatch',
    entries: async () => {
      const entries = packageEntries(await manifestFor('x', '1.0.0'));
      const tok = entries.find((e) => e.path === 'tokenizer.txt')!;
      const data = Buffer.from(tok.data as Buffer);
      data[100] = data[100]! ^ 1;
      tok.data = data;
      return entries;
    },
    message:
      /^File tokenizer\.txt has sha256 [0-9a-f]{64} but the manifest says bbdf33698d29c945[0-9a-f]{48}$/,
  },
  {
    title: 'length mismatch',
    entries: async () => {
      const entries = packageEntries(await manifestFor('x', '1.0.0'));
      entries.find((e) => e.path === 'config.json')!.data = Buffer.from('{}');
      return entries;
    },
    message: 'File config.json is 2 bytes but the manifest says 216',
  },
  {
    title: 'file missing',
    entries: async () => packageEntries(await manifestFor('x', '1.0.0')).filter((e) => e.path !== 'llm.mnn'),
    message: 'File llm.mnn listed in the manifest is missing from the package',
  },
  {
    title: 'file not in the manifest',
    entries: async () => [
      ...packageEntries(await manifestFor('x', '1.0.0')),
      { path: 'extra.so', data: Buffer.from('x') },
    ],
    message: 'File extra.so is not listed in the manifest',
  },
];

for (const c of bad) {
  test(`rejects a package with ${c.title}, naming the entry, and leaves nothing behind`, async (t) => {
    const dataDir = scratch(t);
    const { store } = openAt(dataDir, c.maxEntryBytes ? { limits: { maxEntryBytes: c.maxEntryBytes } } : {});
    const archive = await writeArchive(join(dataDir, 'bad.tar'), await c.entries());
    const err = await t.throwsAsync(store.import(archive));
    if (c.message instanceof RegExp) t.regex(err.message, c.message);
    else t.is(err.message, c.message);
    assertStoreEmpty(t, dataDir, store);
  });
}

test('a directory whose symlink leaves it is refused', async (t) => {
  const dataDir = scratch(t);
  const src = join(dataDir, 'export');
  mkdirSync(src);
  writeFileSync(join(src, 'llm.mnn'), readFileSync(join(TINY, 'llm.mnn')));
  symlinkSync('/etc/passwd', join(src, 'tokenizer.txt'));
  const { store } = openAt(dataDir);
  await t.throwsAsync(store.import(src), {
    message: 'symlink "tokenizer.txt" points outside the package (/etc/passwd)',
  });
  assertStoreEmpty(t, dataDir, store);
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
