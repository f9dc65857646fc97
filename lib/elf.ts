// Which CPU an ELF file was built for, and where it looks for its libraries: read from the file itself, so a
// foreign addon or MNN prefix is refused with both architectures named instead of dlopen's "wrong ELF class" or
// "cannot open shared object file" (and never loaded into a process that would crash on it).
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';

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

/** Node's name for a CPU (`process.arch`) as an ELF machine. */
export function machineOfNodeArch(arch: string): ElfMachine {
  const map: Record<string, ElfMachine> = { x64: 'x86_64', arm64: 'aarch64', riscv64: 'riscv64', arm: 'arm' };
  const m = map[arch];
  if (m === undefined) throw new Error(`no ELF machine known for Node architecture ${arch}`);
  return m;
}

function readAt(fd: number, offset: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, offset);
  return buf.subarray(0, n);
}

/** The machine of the ELF file at `path`; null when it is not ELF or cannot be read. */
export function elfMachineOfFile(path: string): ElfMachine | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    return elfMachine(readAt(fd, 0, 20));
  } finally {
    closeSync(fd);
  }
}

/**
 * Runs `read` on a 64-bit little-endian ELF file (the layouts of every board we target) with its machine; `none`
 * when the file cannot be opened or is not one.
 */
function withElf64<T>(path: string, none: T, read: (fd: number, machine: ElfMachine) => T): T {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return none;
  }
  try {
    const h = readAt(fd, 0, 64);
    const machine = elfMachine(h);
    if (h.length < 64 || h[4] !== 2 || h[5] !== 1 || machine === null) return none;
    return read(fd, machine);
  } finally {
    closeSync(fd);
  }
}

const DT_NULL = 0n;
const DT_STRTAB = 5n;
const DT_RPATH = 15n;
const DT_RUNPATH = 29n;
const PT_LOAD = 1;
const PT_DYNAMIC = 2;

/** DT_RUNPATH (or DT_RPATH) directories of a 64-bit little-endian ELF file, $ORIGIN resolved; [] when none. */
export function elfRunpath(path: string): string[] {
  return withElf64(path, [], (fd) => {
    const h = readAt(fd, 0, 64);
    const phoff = Number(h.readBigUInt64LE(32));
    const phentsize = h.readUInt16LE(54);
    const phnum = h.readUInt16LE(56);
    const loads: { vaddr: bigint; offset: bigint; filesz: bigint }[] = [];
    let dyn: { offset: number; size: number } | undefined;
    for (let i = 0; i < phnum; i++) {
      const p = readAt(fd, phoff + i * phentsize, 56);
      if (p.length < 56) return [];
      const type = p.readUInt32LE(0);
      if (type === PT_LOAD)
        loads.push({
          offset: p.readBigUInt64LE(8),
          vaddr: p.readBigUInt64LE(16),
          filesz: p.readBigUInt64LE(32),
        });
      else if (type === PT_DYNAMIC)
        dyn = { offset: Number(p.readBigUInt64LE(8)), size: Number(p.readBigUInt64LE(32)) };
    }
    if (dyn === undefined || dyn.size > 1 << 20) return [];
    const d = readAt(fd, dyn.offset, dyn.size);
    let strtab: bigint | undefined;
    let runpath: bigint | undefined;
    let rpath: bigint | undefined;
    for (let off = 0; off + 16 <= d.length; off += 16) {
      const tag = d.readBigInt64LE(off);
      const val = d.readBigUInt64LE(off + 8);
      if (tag === DT_NULL) break;
      if (tag === DT_STRTAB) strtab = val;
      else if (tag === DT_RUNPATH) runpath = val;
      else if (tag === DT_RPATH) rpath = val;
    }
    const index = runpath ?? rpath;
    if (strtab === undefined || index === undefined) return [];
    // DT_STRTAB is a virtual address: the PT_LOAD segment holding it gives the file offset.
    const seg = loads.find((l) => strtab! >= l.vaddr && strtab! < l.vaddr + l.filesz);
    if (seg === undefined) return [];
    const text = readAt(fd, Number(strtab - seg.vaddr + seg.offset + index), 4096);
    const end = text.indexOf(0);
    const origin = path.slice(0, path.lastIndexOf('/')) || '/';
    return text
      .subarray(0, end < 0 ? text.length : end)
      .toString('utf8')
      .split(':')
      .filter(Boolean)
      .map((dir) => dir.replace(/\$\{?ORIGIN\}?/g, origin));
  });
}

const SHT_RISCV_ATTRIBUTES = 0x70000003;

/**
 * The ISA string a RISC-V ELF file was built for (its .riscv.attributes Tag_RISCV_arch, e.g.
 * "rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_v1p0_zicsr2p0"); null for other files or when the section is absent.
 */
export function riscvArchOfFile(path: string): string | null {
  return withElf64(path, null, (fd, machine) => {
    if (machine !== 'riscv64') return null;
    const h = readAt(fd, 0, 64);
    const shoff = Number(h.readBigUInt64LE(40));
    const shentsize = h.readUInt16LE(58);
    const shnum = h.readUInt16LE(60);
    for (let i = 0; i < shnum; i++) {
      const sh = readAt(fd, shoff + i * shentsize, 64);
      if (sh.length < 64 || sh.readUInt32LE(4) !== SHT_RISCV_ATTRIBUTES) continue;
      const size = Number(sh.readBigUInt64LE(32));
      const body = readAt(fd, Number(sh.readBigUInt64LE(24)), Math.min(size, 1 << 16));
      // Format 'A', then the "riscv" vendor subsection whose Tag_RISCV_arch (5) is a NUL-terminated string; the
      // string is the only "rv32…"/"rv64…" text in the section.
      const at = body.indexOf('rv64') >= 0 ? body.indexOf('rv64') : body.indexOf('rv32');
      if (at < 0) return null;
      const end = body.indexOf(0, at);
      return body.subarray(at, end < 0 ? body.length : end).toString('ascii');
    }
    return null;
  });
}

/** Whether a RISC-V ISA string includes the V (vector) extension, in GCC's or LLVM's spelling. */
export function riscvArchHasVector(arch: string): boolean {
  const [base = '', ...rest] = arch.toLowerCase().split('_');
  // "rv64imafdcv" or "rv64i2p1": the single letters after rv64, version numbers (2p1) removed.
  const letters = base.replace(/^rv(32|64)/, '').replace(/\d+(p\d+)?/g, '');
  return letters.includes('v') || rest.some((ext) => /^v(\d|$)/.test(ext));
}

/**
 * Why a RISC-V library built with the V extension cannot run on this CPU (MNN's RVV build has no run-time
 * dispatch: its first vector instruction would kill the process with SIGILL). `cpuHasVector` comes from the
 * auxiliary vector (AT_HWCAP bit 'V') or the ISA line of /proc/cpuinfo, named in `cpuSource`.
 */
export function riscvVectorRefusal(
  libraryPath: string,
  cpuHasVector: boolean | null,
  cpuSource: string,
): string | undefined {
  const arch = riscvArchOfFile(libraryPath);
  if (arch === null || !riscvArchHasVector(arch) || cpuHasVector !== false) return undefined;
  return `${libraryPath} is built for ${arch}, which needs the RISC-V vector extension (V), and this CPU has none (${cpuSource}); install an MNN built without MNN_USE_RVV for this board (mnn-edge engine build plans it from the board's ISA)`;
}

/** The first `library` the dynamic loader would take for `path`: LD_LIBRARY_PATH, then its RUNPATH. */
export function libraryFor(
  path: string,
  library: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const dirs = [...(env['LD_LIBRARY_PATH'] ?? '').split(':').filter(Boolean), ...elfRunpath(path)];
  for (const dir of dirs) {
    const lib = join(dir, library);
    if (existsSync(lib) && statSync(lib).isFile()) return lib;
  }
  return undefined;
}

/**
 * Why the native library at `path` cannot load into this process, from the ELF headers: the file itself, or a
 * `library` (e.g. libMNN.so) in its RUNPATH or LD_LIBRARY_PATH, built for another CPU. Undefined when nothing
 * foreign is found.
 */
export function foreignElfReason(
  path: string,
  what: string,
  options: { library?: string; arch?: string; env?: NodeJS.ProcessEnv } = {},
): string | undefined {
  const here = machineOfNodeArch(options.arch ?? process.arch);
  const mine = elfMachineOfFile(path);
  if (mine !== null && mine !== here) {
    return `${what} at ${path} is built for ${mine} and this Node is ${here} (process.arch ${options.arch ?? process.arch}); build it for ${here} or run it with a ${mine} Node`;
  }
  if (options.library === undefined) return undefined;
  // The first one found is what the dynamic loader takes.
  const lib = libraryFor(path, options.library, options.env ?? process.env);
  if (lib === undefined) return undefined;
  const m = elfMachineOfFile(lib);
  if (m !== null && m !== here) {
    return `${what} at ${path} would load ${lib}, which is built for ${m}, and this Node is ${here}; point MNN_ROOT (and LD_LIBRARY_PATH) at a ${here} MNN prefix`;
  }
  return undefined;
}
