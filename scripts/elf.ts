// Which CPU an ELF file was built for, from its header: enough to prove a staged tree carries binaries for the
// target only (an npm tree easily picks up prebuilt binaries for other platforms).
import { closeSync, lstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join, relative } from 'node:path';

export type ElfMachine = 'x86_64' | 'aarch64' | 'riscv64' | 'riscv32' | 'arm' | 'i386' | `machine-${number}`;

const MACHINES: Record<number, (elf64: boolean) => ElfMachine> = {
  3: () => 'i386',
  40: () => 'arm',
  62: () => 'x86_64',
  183: () => 'aarch64',
  243: (elf64) => (elf64 ? 'riscv64' : 'riscv32'),
};

/** The machine of an ELF header, or null when the bytes are not one. */
export function elfMachine(header: Uint8Array): ElfMachine | null {
  if (header.length < 20) return null;
  if (header[0] !== 0x7f || header[1] !== 0x45 || header[2] !== 0x4c || header[3] !== 0x46) return null;
  const elf64 = header[4] === 2;
  const little = header[5] === 1;
  const machine = little ? header[18]! | (header[19]! << 8) : (header[18]! << 8) | header[19]!;
  return MACHINES[machine]?.(elf64) ?? `machine-${machine}`;
}

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

/** Node's name for a CPU (`process.arch`) as an ELF machine. */
export function machineOfNodeArch(arch: string): ElfMachine {
  const map: Record<string, ElfMachine> = { x64: 'x86_64', arm64: 'aarch64', riscv64: 'riscv64', arm: 'arm' };
  const m = map[arch];
  if (m === undefined) throw new Error(`no ELF machine known for Node architecture ${arch}`);
  return m;
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
