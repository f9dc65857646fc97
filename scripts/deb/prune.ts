// What the Debian package drops or changes of the staged app tree, each for a reason lintian checks and Debian
// policy states: development dotfiles of npm packages, better-sqlite3's test extension, executable bits on files
// nothing runs directly (the unit and /usr/bin/mnn-edge run everything through the shipped node), and symbols.
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files of npm packages' development (lint, publish and VCS settings); nothing at run time reads them. */
const DEV_DOTFILE =
  /^(\.eslintrc(\..+)?|\.npmignore|\.gitattributes|\.gitignore|\.travis\.yml|\.editorconfig)$/;

export function pruneForDebian(appDir: string, machine: string): void {
  rmSync(join(appDir, 'node_modules/better-sqlite3/build/Release/test_extension.node'), { force: true });
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) continue;
      if (st.isDirectory()) {
        visit(path);
        continue;
      }
      if (DEV_DOTFILE.test(name)) {
        rmSync(path);
        continue;
      }
      chmodSync(path, 0o644);
      if (name.endsWith('.node')) stripElf(path, machine);
    }
  };
  visit(appDir);
}

/** Strips symbols (binutils-multiarch's strip reads every architecture; the cross one is the fallback). */
export function stripElf(path: string, machine: string): void {
  for (const tool of ['strip', `${machine}-linux-gnu-strip`]) {
    const r = spawnSync(
      tool,
      ['--strip-unneeded', '--remove-section=.comment', '--remove-section=.note', path],
      {
        encoding: 'utf8',
      },
    );
    if (r.status === 0) return;
  }
  throw new Error(
    `cannot strip ${path} (${machine}): install binutils-multiarch (scripts/install-arm64-deps.sh)`,
  );
}

const PT_GNU_STACK = 0x6474e551;
const PF_X = 1;

/** Clears the execute flag of an ELF64 little-endian file's PT_GNU_STACK header (what `execstack -c` does; the
 *  tool is gone from Debian and patchelf 0.14 cannot). Returns whether it changed anything. */
export function clearExecStack(path: string): boolean {
  const elf = readFileSync(path);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) {
    throw new Error(`${path}: not an ELF64 little-endian file`);
  }
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (elf.readUInt32LE(at) !== PT_GNU_STACK) continue;
    const flags = elf.readUInt32LE(at + 4);
    if ((flags & PF_X) === 0) return false;
    elf.writeUInt32LE(flags & ~PF_X, at + 4);
    writeFileSync(path, elf);
    return true;
  }
  return false;
}
