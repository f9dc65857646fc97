import type { CpuArchitecture } from '../../lib/capabilities.js';

// /proc/cpuinfo differs per architecture and per kernel (tabs or spaces, `uarch` present or not, trailer blocks
// such as the Raspberry Pi's Hardware/Model). These helpers only parse; evidence is attached by the caller.

export type CpuinfoBlock = ReadonlyMap<string, string>;

export interface ParsedCpuinfo {
  /** One block per `processor` entry, in file order. */
  processors: CpuinfoBlock[];
  /** Keys outside processor blocks (arm32/RPi `Hardware`, `Model`, `Serial`). */
  trailer: CpuinfoBlock;
}

export function parseCpuinfo(text: string): ParsedCpuinfo {
  const processors: Map<string, string>[] = [];
  const trailer = new Map<string, string>();
  let current: Map<string, string> | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.replaceAll('\0', '');
    if (line.trim() === '') {
      current = null;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!/^[a-z0-9 _-]{1,40}$/.test(key)) continue;
    if (key === 'processor' && /^\d+$/.test(value)) {
      current = new Map([[key, value]]);
      processors.push(current);
    } else if (current) current.set(key, value);
    else trailer.set(key, value);
  }
  return { processors, trailer };
}

export interface ArchitectureGuess {
  value: CpuArchitecture;
  /** The line that decided it, for evidence. */
  because: string;
}

export function architectureOf(cpu: ParsedCpuinfo): ArchitectureGuess | null {
  const first = cpu.processors[0];
  if (!first) return null;
  const isa = first.get('isa');
  if (isa && /^rv64/i.test(isa)) return { value: 'riscv64', because: `isa: ${isa.split('_')[0]}` };
  if (first.has('flags') && first.has('vendor_id')) {
    const flags = first.get('flags')!.split(/\s+/);
    if (flags.includes('lm'))
      return { value: 'x86_64', because: `vendor_id: ${first.get('vendor_id')}, flags: lm` };
  }
  const arch = first.get('cpu architecture');
  if (arch === '8' || arch === 'AArch64') return { value: 'aarch64', because: `CPU architecture: ${arch}` };
  if (arch === '7') return { value: 'armv7', because: `CPU architecture: ${arch}` };
  return null;
}

/** Arm Ltd. (implementer 0x41) part numbers of the cores found on the boards we support and their peers. */
const ARM_PARTS: Record<string, string> = {
  '0xd03': 'Cortex-A53',
  '0xd04': 'Cortex-A35',
  '0xd05': 'Cortex-A55',
  '0xd07': 'Cortex-A57',
  '0xd08': 'Cortex-A72',
  '0xd09': 'Cortex-A73',
  '0xd0a': 'Cortex-A75',
  '0xd0b': 'Cortex-A76',
  '0xd0c': 'Neoverse-N1',
  '0xd0d': 'Cortex-A77',
  '0xd40': 'Neoverse-V1',
  '0xd41': 'Cortex-A78',
  '0xd42': 'Cortex-A78AE',
  '0xd44': 'Cortex-X1',
  '0xd46': 'Cortex-A510',
  '0xd47': 'Cortex-A710',
  '0xd48': 'Cortex-X2',
  '0xd49': 'Neoverse-N2',
  '0xd4b': 'Cortex-A78C',
  '0xd4d': 'Cortex-A715',
  '0xd4e': 'Cortex-X3',
  '0xd4f': 'Neoverse-V2',
  '0xd80': 'Cortex-A520',
  '0xd81': 'Cortex-A720',
  '0xd82': 'Cortex-X4',
  '0xd85': 'Cortex-X925',
  '0xd87': 'Cortex-A725',
};

/** A readable core name for one processor block, or null when we cannot name it. */
export function coreName(block: CpuinfoBlock): string | null {
  const part = block.get('cpu part')?.toLowerCase();
  const implementer = block.get('cpu implementer')?.toLowerCase();
  if (part && implementer === '0x41') return ARM_PARTS[part] ?? `Arm part ${part}`;
  if (part && implementer) return `implementer ${implementer} part ${part}`;
  const uarch = block.get('uarch');
  if (uarch) return uarch;
  const model = block.get('model name');
  if (model)
    return model
      .replace(/\(R\)|\(TM\)/g, '')
      .replace(/\s+/g, ' ')
      .trim();
  const marchid = block.get('marchid');
  if (marchid) return `marchid ${marchid}`;
  return null;
}

/** The single-letter extensions of a RISC-V ISA string: the part after rv64/rv32 up to the first `_`. */
export function riscvBaseLetters(isa: string): string {
  const base = isa.toLowerCase().split('_')[0] ?? '';
  const m = /^rv(?:32|64|128)([a-z]*)$/.exec(base);
  return m?.[1] ?? '';
}

/** The multi-letter extensions (`zvfh`, `zvl256b`, ...). */
export function riscvMultiLetter(isa: string): string[] {
  return isa
    .toLowerCase()
    .split('_')
    .slice(1)
    .filter((x) => /^[a-z][a-z0-9]*$/.test(x));
}

/** Space-separated word list (arm `Features`, x86 `flags`) as a set. */
export function wordSet(value: string | undefined): Set<string> {
  return new Set((value ?? '').split(/\s+/).filter(Boolean));
}

/** Features present on every core: a thread may migrate, so only the intersection is safe to use. */
export function commonWords(blocks: readonly CpuinfoBlock[], key: string): Set<string> | null {
  let common: Set<string> | null = null;
  for (const b of blocks) {
    const v = b.get(key);
    if (v === undefined) continue;
    const words = wordSet(v);
    if (common === null) common = words;
    else for (const w of common) if (!words.has(w)) common.delete(w);
  }
  return common;
}
