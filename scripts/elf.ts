// Which CPU an ELF file was built for, from its header: enough to prove a staged tree carries binaries for the
// target only (an npm tree easily picks up prebuilt binaries for other platforms).
import { closeSync, lstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type ElfMachine, elfMachine } from '../lib/elf.js';

export { type ElfMachine, elfMachine, machineOfNodeArch } from '../lib/elf.js';

export interface ElfFile {
  /** Relative to the scanned directory. */
  path: string;
  machine: ElfMachine;
}

/** Every ELF file below `dir` (symbolic links are not followed), sorted by path. */
export function listElfFiles(dir: string): ElfFile[] {
  const found: ElfFile[] = [];
  const header = new Uint8Array(20);
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile() && st.size >= 20) {
        const fd = openSync(path, 'r');
        try {
          const n = readSync(fd, header, 0, 20, 0);
          const machine = elfMachine(header.subarray(0, n));
          if (machine !== null) found.push({ path: relative(dir, path), machine });
        } finally {
          closeSync(fd);
        }
      }
    }
  };
  walk(dir);
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

/** Apparent size of a tree in bytes (files and link targets' names, as du --apparent-size counts). */
export function treeBytes(dir: string): number {
  let total = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else total += st.size;
    }
  };
  walk(dir);
  return total;
}
