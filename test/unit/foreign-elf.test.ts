import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createAddonLoader } from '../../engine/src/loader.js';
import { elfRunpath, foreignElfReason } from '../../lib/elf.js';

// An addon or an MNN prefix built for another CPU is refused from its ELF header, with both architectures named,
// before anything is dlopen()ed: never "wrong ELF class" or a crash.

function elf(machine: number): Buffer {
  const b = Buffer.alloc(64);
  b.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
  b.writeUInt16LE(machine, 18);
  return b;
}

function dir(t: { teardown(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'foreign-elf-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test('an arm64 engine addon given to an x86 Node is refused by the loader with both CPUs named', (t) => {
  const d = dir(t);
  const addon = join(d, 'mnn_edge_engine.node');
  writeFileSync(addon, elf(183));
  const availability = createAddonLoader([addon], d).availability();
  t.false(availability.available);
  const reason = availability.available ? '' : availability.reason;
  t.is(
    reason,
    `the engine addon at ${addon} is built for aarch64 and this Node is x86_64 (process.arch x64); build it for x86_64 or run it with a aarch64 Node`,
  );
  t.throws(() => createAddonLoader([addon], d).load(), {
    message: /built for aarch64 and this Node is x86_64/,
  });
});

test('the same check under an arm64 Node refuses an x86 or riscv64 file', (t) => {
  const d = dir(t);
  writeFileSync(join(d, 'x86.node'), elf(62));
  writeFileSync(join(d, 'rv.node'), elf(243));
  t.regex(
    foreignElfReason(join(d, 'x86.node'), 'the addon', { arch: 'arm64' })!,
    /built for x86_64 and this Node is aarch64/,
  );
  t.regex(
    foreignElfReason(join(d, 'rv.node'), 'the addon', { arch: 'arm64' })!,
    /built for riscv64 and this Node is aarch64/,
  );
  t.is(foreignElfReason(join(d, 'x86.node'), 'the addon', { arch: 'x64' }), undefined);
});

test('an arm64 libMNN.so on the library path of an x86 addon is refused, naming the prefix file', (t) => {
  const d = dir(t);
  const prefix = join(d, 'mnn-aarch64', 'lib');
  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'libMNN.so'), elf(183));
  // This Node's own binary stands in for an x86 addon: a real x86-64 ELF file.
  const reason = foreignElfReason(process.execPath, 'the engine addon', {
    library: 'libMNN.so',
    arch: 'x64',
    env: { LD_LIBRARY_PATH: prefix },
  });
  t.is(
    reason,
    `the engine addon at ${process.execPath} would load ${join(prefix, 'libMNN.so')}, which is built for aarch64, and this Node is x86_64; point MNN_ROOT (and LD_LIBRARY_PATH) at a x86_64 MNN prefix`,
  );
  writeFileSync(join(prefix, 'libMNN.so'), elf(62));
  t.is(
    foreignElfReason(process.execPath, 'the engine addon', {
      library: 'libMNN.so',
      arch: 'x64',
      env: { LD_LIBRARY_PATH: prefix },
    }),
    undefined,
  );
});

test('RUNPATH: absent or unreadable gives no directories, never an exception', (t) => {
  const d = dir(t);
  writeFileSync(join(d, 'junk'), 'not elf');
  t.deepEqual(elfRunpath(join(d, 'junk')), []);
  t.deepEqual(elfRunpath(join(d, 'missing')), []);
  t.true(Array.isArray(elfRunpath(process.execPath)));
});
