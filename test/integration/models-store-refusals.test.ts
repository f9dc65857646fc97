// Packages the model store refuses, each with its reason and nothing left behind.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { TarWriteEntry } from '../../models/index.js';
import {
  assertStoreEmpty,
  manifestFor,
  openAt,
  packageEntries,
  scratch,
  TINY,
  writeArchive,
} from '../helpers/model-store-fixtures.js';

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
