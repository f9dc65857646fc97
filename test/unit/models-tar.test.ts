import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import {
  readTar,
  resolveLinkTarget,
  safePackagePath,
  type TarWriteEntry,
  tarChunksFromFile,
  writeTar,
} from '../../models/index.js';

async function tarBytes(entries: TarWriteEntry[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of writeTar(entries)) chunks.push(c);
  return Buffer.concat(chunks);
}

async function* once(buf: Buffer, chunkSize = 7): AsyncGenerator<Buffer> {
  // Odd chunk sizes exercise the reader's reassembly across header and data boundaries.
  for (let i = 0; i < buf.length; i += chunkSize) yield buf.subarray(i, i + chunkSize);
}

async function readAll(buf: Buffer): Promise<{ path: string; type: string; data: string; link?: string }[]> {
  const out = [];
  for await (const e of readTar(once(buf))) {
    const parts: Buffer[] = [];
    for await (const c of e.body()) parts.push(c);
    out.push({
      path: e.path,
      type: e.type,
      data: Buffer.concat(parts).toString(),
      ...(e.linkTarget ? { link: e.linkTarget } : {}),
    });
  }
  return out;
}

test('writer and reader round-trip files, directories, links and long names (pax)', async (t) => {
  const long = `${'deep/'.repeat(40)}file-with-a-long-name.bin`;
  const entries = await readAll(
    await tarBytes([
      { path: 'dir', type: 'directory' },
      { path: 'dir/a.txt', data: Buffer.from('hello') },
      { path: long, data: Buffer.from('x'.repeat(1000)) },
      { path: 'link', type: 'symlink', linkTarget: `${'t/'.repeat(60)}target` },
      { path: 'empty', data: Buffer.alloc(0) },
    ]),
  );
  t.deepEqual(entries, [
    { path: 'dir', type: 'directory', data: '' },
    { path: 'dir/a.txt', type: 'file', data: 'hello' },
    { path: long, type: 'file', data: 'x'.repeat(1000) },
    { path: 'link', type: 'symlink', data: '', link: `${'t/'.repeat(60)}target` },
    { path: 'empty', type: 'file', data: '' },
  ]);
});

test('reader skips bodies the consumer does not read', async (t) => {
  const buf = await tarBytes([
    { path: 'a', data: Buffer.alloc(1500, 1) },
    { path: 'b', data: Buffer.from('second') },
  ]);
  const paths: string[] = [];
  for await (const e of readTar(once(buf, 100))) paths.push(`${e.path}:${e.size}`);
  t.deepEqual(paths, ['a:1500', 'b:6']);
});

test('reader understands GNU long names (type L)', async (t) => {
  const name = `${'g'.repeat(150)}.txt`;
  const longHeader = (await tarBytes([{ path: '././@LongLink', data: Buffer.from(`${name}\0`) }])).subarray(
    0,
    1024,
  );
  longHeader[156] = 'L'.charCodeAt(0);
  // Recompute the checksum after changing the type flag.
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : longHeader[i]!;
  longHeader.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  const body = await tarBytes([{ path: 'short-placeholder', data: Buffer.from('gnu') }]);
  const entries = await readAll(Buffer.concat([longHeader, body]));
  t.deepEqual(entries, [{ path: name, type: 'file', data: 'gnu' }]);
});

test('reader reports truncation and corruption naming the entry', async (t) => {
  const buf = await tarBytes([{ path: 'model/llm.mnn', data: Buffer.alloc(2000, 7) }]);
  await t.throwsAsync(readAll(buf.subarray(0, 1200)), {
    message: 'truncated archive: data of model/llm.mnn ends 1312 bytes early',
  });
  await t.throwsAsync(readAll(buf.subarray(0, 300)), {
    message: 'truncated archive: partial header after (start of archive)',
  });
  await t.throwsAsync(readAll(buf.subarray(0, 2560)), {
    message: 'truncated archive: no end-of-archive marker after model/llm.mnn',
  });
  const corrupt = Buffer.from(buf);
  corrupt[110] = 0x31; // inside the uid field, so the name stays readable
  await t.throwsAsync(readAll(corrupt), { message: 'bad header checksum for model/llm.mnn at byte 0' });
});

test('gzip archives are detected by their magic and corrupt gzip is a clear error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'models-tar-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const tar = await tarBytes([{ path: 'a.txt', data: Buffer.from('zipped') }]);
  writeFileSync(join(dir, 'p.tar.gz'), gzipSync(tar));
  const got: string[] = [];
  for await (const e of readTar(tarChunksFromFile(join(dir, 'p.tar.gz')))) {
    for await (const c of e.body()) got.push(`${e.path}=${c.toString()}`);
  }
  t.deepEqual(got, ['a.txt=zipped']);
  const gz = gzipSync(await tarBytes([{ path: 'noise.bin', data: randomBytes(8192) }]));
  writeFileSync(join(dir, 'bad.tar.gz'), gz.subarray(0, gz.length >> 1));
  const err = await t.throwsAsync(async () => {
    for await (const _ of readTar(tarChunksFromFile(join(dir, 'bad.tar.gz')))) {
      // drain
    }
  });
  t.regex(err.message, /bad\.tar\.gz: corrupt gzip stream \(unexpected end of file\)$/);
});

test('package paths: traversal, absolute and odd paths are refused with the entry named', (t) => {
  t.is(safePackagePath('./a//b/./c.mnn'), 'a/b/c.mnn');
  t.throws(() => safePackagePath('../etc/passwd'), {
    message: 'entry "../etc/passwd" has a path that leaves the package (..)',
  });
  t.throws(() => safePackagePath('a/../../x'), {
    message: 'entry "a/../../x" has a path that leaves the package (..)',
  });
  t.throws(() => safePackagePath('/etc/passwd'), { message: 'entry "/etc/passwd" has an absolute path' });
  t.throws(() => safePackagePath('a\\..\\b'), {
    message: 'entry "a\\\\..\\\\b" has a backslash in its path',
  });
  t.throws(() => safePackagePath('./'), { message: 'entry "./" has an empty path' });
});

test('link targets must stay inside the package', (t) => {
  t.is(resolveLinkTarget('sub/link', '../llm.mnn', 'symlink'), 'llm.mnn');
  t.is(resolveLinkTarget('sub/link', 'sub/llm.mnn', 'hardlink'), 'sub/llm.mnn');
  t.throws(() => resolveLinkTarget('sub/link', '../../etc/shadow', 'symlink'), {
    message: 'symlink "sub/link" points outside the package ("../../etc/shadow")',
  });
  t.throws(() => resolveLinkTarget('link', '/etc/shadow', 'hardlink'), {
    message: 'hardlink "link" points outside the package ("/etc/shadow")',
  });
});

const hasTar = spawnSync('tar', ['--version']).status === 0;
(hasTar ? test : test.skip)(
  'interoperates with GNU tar in gnu and pax formats, both directions',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'models-tar-interop-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const deep = `${'d'.repeat(60)}/${'e'.repeat(60)}`;
    mkdirSync(join(dir, 'src', deep), { recursive: true });
    writeFileSync(join(dir, 'src', deep, 'file.txt'), 'hi\n');
    symlinkSync('file.txt', join(dir, 'src', deep, 'link'));
    for (const [format, name] of [
      ['gnu', 'gnu.tar'],
      ['pax', 'pax.tgz'],
    ] as const) {
      const args = [
        '-C',
        join(dir, 'src'),
        `--format=${format}`,
        name.endsWith('tgz') ? '-czf' : '-cf',
        join(dir, name),
        '.',
      ];
      t.is(spawnSync('tar', args).status, 0);
      const seen: string[] = [];
      for await (const e of readTar(tarChunksFromFile(join(dir, name)))) {
        const parts: Buffer[] = [];
        for await (const c of e.body()) parts.push(c);
        if (e.type !== 'directory')
          seen.push(`${e.type} ${e.path} ${e.linkTarget ?? Buffer.concat(parts).toString()}`);
      }
      t.deepEqual(seen.sort(), [`file ./${deep}/file.txt hi\n`, `symlink ./${deep}/link file.txt`], format);
    }
    const long = `${'x/'.repeat(80)}long.txt`;
    writeFileSync(join(dir, 'ours.tar'), await tarBytes([{ path: long, data: Buffer.from('ours') }]));
    const listed = spawnSync('tar', ['-xOf', join(dir, 'ours.tar'), long], { encoding: 'utf8' });
    t.is(listed.stdout, 'ours');
  },
);
