import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { elfMachine, listElfFiles } from '../../scripts/elf.js';
import { stage } from '../../scripts/stage.js';
import { parseStageManifest } from '../../scripts/stage-manifest.js';

/** The first 64 bytes of an ELF file for `machine` (e_machine), little-endian unless told. */
function elfHeader(machine: number, opts: { elf64?: boolean; bigEndian?: boolean } = {}): Buffer {
  const b = Buffer.alloc(64);
  b.set([0x7f, 0x45, 0x4c, 0x46, opts.elf64 === false ? 1 : 2, opts.bigEndian ? 2 : 1, 1]);
  if (opts.bigEndian) b.writeUInt16BE(machine, 18);
  else b.writeUInt16LE(machine, 18);
  return b;
}

test('elfMachine reads the CPU from the header and ignores files that are not ELF', (t) => {
  t.is(elfMachine(elfHeader(0xb7)), 'aarch64');
  t.is(elfMachine(elfHeader(0x3e)), 'x86_64');
  t.is(elfMachine(elfHeader(0xf3)), 'riscv64');
  t.is(elfMachine(elfHeader(0xf3, { elf64: false })), 'riscv32');
  t.is(elfMachine(elfHeader(0x28, { elf64: false, bigEndian: true })), 'arm');
  t.is(elfMachine(elfHeader(0x99)), 'machine-153');
  t.is(elfMachine(Buffer.from('#!/usr/bin/env node\nconsole.log(1)\n')), null);
  t.is(elfMachine(Buffer.from([0x7f, 0x45])), null);
});

/** A tiny project whose one production dependency carries a node-gyp build and a prebuilt for another CPU. */
function fakeProject(t: { teardown(fn: () => void): void }, files: Record<string, string | Buffer>): string {
  const root = mkdtempSync(join(tmpdir(), 'stage-elf-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const all: Record<string, string | Buffer> = {
    'package.json': JSON.stringify({ name: 'fake', version: '1.0.0', bin: { fake: 'dist/cli.js' } }),
    'package-lock.json': JSON.stringify({
      lockfileVersion: 3,
      packages: { '': { name: 'fake' }, 'node_modules/native': { version: '1.0.0', integrity: 'sha512-x' } },
    }),
    // The source beside its build: the stage refuses a dist/ holding output no source produces.
    'cli.ts': '',
    'dist/cli.js': '#!/usr/bin/env node\n',
    'node_modules/native/package.json': '{"name":"native"}',
    ...files,
  };
  for (const [path, data] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), data);
  }
  return root;
}

const manifest = parseStageManifest(
  'app /usr/lib/node_modules/fake\nkeep package.json\nkeep dist\nkeep node_modules\n',
);
const app = 'usr/lib/node_modules/fake';

test('the stage keeps only build/Release/*.node of a node-gyp build and lists every ELF file with its CPU', (t) => {
  const root = fakeProject(t, {
    'node_modules/native/build/Release/native.node': elfHeader(0xb7),
    'node_modules/native/build/Release/obj.target/native/src/native.o': elfHeader(0xb7),
    'node_modules/native/build/Makefile': 'all:\n',
  });
  const destdir = mkdtempSync(join(tmpdir(), 'stage-elf-dest-'));
  t.teardown(() => rmSync(destdir, { recursive: true, force: true }));
  const lines: string[] = [];
  const result = stage({ destdir, root, manifest, arch: 'aarch64', log: (l) => lines.push(l) });
  t.deepEqual(result.elfFiles, [
    { path: `${app}/node_modules/native/build/Release/native.node`, machine: 'aarch64' },
  ]);
  t.false(
    existsSync(join(destdir, app, 'node_modules/native/build/Makefile')),
    'build files are not shipped',
  );
  t.true(lines.includes(`ELF aarch64  ${app}/node_modules/native/build/Release/native.node`));
  t.true(result.bytes > 0);
  t.deepEqual(listElfFiles(destdir), result.elfFiles);
});

test('an ELF file for another CPU than the target stops the stage and is named', (t) => {
  const root = fakeProject(t, {
    'node_modules/native/build/Release/native.node': elfHeader(0xb7),
    'node_modules/native/prebuilds/linux-x64/native.node': elfHeader(0x3e),
  });
  const destdir = mkdtempSync(join(tmpdir(), 'stage-elf-dest-'));
  t.teardown(() => rmSync(destdir, { recursive: true, force: true }));
  t.throws(() => stage({ destdir, root, manifest, arch: 'aarch64' }), {
    message: `the staged tree has ELF files for another CPU than aarch64: ${app}/node_modules/native/prebuilds/linux-x64/native.node (x86_64)`,
  });
});

test('a dist/ holding output that no source produces any more is refused, not shipped', (t) => {
  // A source moved away leaves its old build behind: tsc never deletes it, the stage would copy it.
  const root = fakeProject(t, { 'dist/engine/src/index.js': 'export {};\n' });
  const destdir = mkdtempSync(join(tmpdir(), 'stage-elf-dest-'));
  t.teardown(() => rmSync(destdir, { recursive: true, force: true }));
  t.throws(() => stage({ destdir, root, manifest, arch: 'aarch64' }), {
    message:
      /dist holds output that no source produces any more \(engine\/src\/index\.js\): run `npm run build`/,
  });
});
