import { readFileSync } from 'node:fs';

// /proc/self/auxv: what the kernel told this process about the CPU. On arm64 HWCAP/HWCAP2 are authoritative for
// user space (cpuinfo's Features line is printed from the same bits); on RISC-V HWCAP holds the single-letter
// extensions (bit = letter - 'A'). Only 64-bit little-endian layouts are decoded: every board we target.

const AT_NULL = 0n;
const AT_PAGESZ = 6n;
const AT_HWCAP = 16n;
const AT_HWCAP2 = 26n;

export interface Auxv {
  pageSize: number | null;
  hwcap: bigint | null;
  hwcap2: bigint | null;
}

/** Returns null when the bytes are not a plausible auxv (wrong length, no AT_NULL terminator). */
export function parseAuxv(bytes: Uint8Array): Auxv | null {
  if (bytes.length < 16 || bytes.length % 16 !== 0) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Auxv = { pageSize: null, hwcap: null, hwcap2: null };
  for (let off = 0; off + 16 <= bytes.length; off += 16) {
    const type = view.getBigUint64(off, true);
    const value = view.getBigUint64(off + 8, true);
    if (type === AT_NULL) return out;
    if (type === AT_PAGESZ) out.pageSize = Number(value);
    else if (type === AT_HWCAP) out.hwcap = value;
    else if (type === AT_HWCAP2) out.hwcap2 = value;
  }
  return null;
}

/** arch/arm64/include/uapi/asm/hwcap.h bit positions for the features the engine cares about. */
export const ARM64_HWCAP_BITS = {
  fphp: { reg: 'hwcap', bit: 9 },
  asimdhp: { reg: 'hwcap', bit: 10 },
  asimddp: { reg: 'hwcap', bit: 20 },
  sve: { reg: 'hwcap', bit: 22 },
  sve2: { reg: 'hwcap2', bit: 1 },
  i8mm: { reg: 'hwcap2', bit: 13 },
  bf16: { reg: 'hwcap2', bit: 14 },
  sme: { reg: 'hwcap2', bit: 23 },
  sme2: { reg: 'hwcap2', bit: 37 },
} as const;

export type Arm64HwcapName = keyof typeof ARM64_HWCAP_BITS;

export function arm64HasHwcap(auxv: Auxv, name: Arm64HwcapName): boolean | null {
  const { reg, bit } = ARM64_HWCAP_BITS[name];
  const word = reg === 'hwcap' ? auxv.hwcap : auxv.hwcap2;
  if (word === null) return reg === 'hwcap2' && auxv.hwcap !== null ? false : null;
  return ((word >> BigInt(bit)) & 1n) === 1n;
}

export function riscvHasLetter(auxv: Auxv, letter: string): boolean | null {
  if (auxv.hwcap === null) return null;
  const bit = letter.toUpperCase().charCodeAt(0) - 65;
  return ((auxv.hwcap >> BigInt(bit)) & 1n) === 1n;
}

export function hex(v: bigint): string {
  return `0x${v.toString(16)}`;
}

/** This process's auxiliary vector; null where /proc/self/auxv cannot be read or decoded. */
export function readOwnAuxv(): Auxv | null {
  try {
    return parseAuxv(readFileSync('/proc/self/auxv'));
  } catch {
    return null;
  }
}
