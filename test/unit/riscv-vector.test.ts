// A RISC-V MNN built for the V extension is refused on a CPU without V, from the library's own ISA attributes
// (.riscv.attributes) and the CPU's AT_HWCAP, before anything is loaded.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { parseAuxv, riscvHasLetter } from '../../lib/auxv.js';
import { riscvArchHasVector, riscvArchOfFile, riscvVectorRefusal } from '../../lib/elf.js';

/** A minimal ELF64 riscv64 file whose only section is .riscv.attributes with Tag_RISCV_arch = `arch`. */
function riscvElf(arch: string): Buffer {
  const vendor = Buffer.concat([Buffer.from('riscv\0'), Buffer.from([1])]); // vendor name, Tag_File
  const attr = Buffer.concat([Buffer.from([5]), Buffer.from(`${arch}\0`)]); // Tag_RISCV_arch, NTBS
  const fileLen = Buffer.alloc(4);
  fileLen.writeUInt32LE(1 + 4 + attr.length);
  const sub = Buffer.concat([vendor, fileLen, attr]);
  const subLen = Buffer.alloc(4);
  subLen.writeUInt32LE(4 + sub.length);
  const body = Buffer.concat([Buffer.from('A'), subLen, sub]);
  const header = Buffer.alloc(64);
  header.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
  header.writeUInt16LE(3, 16); // ET_DYN
  header.writeUInt16LE(243, 18); // EM_RISCV
  const shoff = 64 + body.length;
  header.writeBigUInt64LE(BigInt(shoff), 40);
  header.writeUInt16LE(64, 58);
  header.writeUInt16LE(1, 60);
  const sh = Buffer.alloc(64);
  sh.writeUInt32LE(0x70000003, 4); // SHT_RISCV_ATTRIBUTES
  sh.writeBigUInt64LE(64n, 24);
  sh.writeBigUInt64LE(BigInt(body.length), 32);
  return Buffer.concat([header, body, sh]);
}

function auxvWith(hwcap: bigint): Uint8Array {
  const b = Buffer.alloc(32);
  b.writeBigUInt64LE(16n, 0); // AT_HWCAP
  b.writeBigUInt64LE(hwcap, 8);
  return b; // then AT_NULL
}

const letters = (s: string) => [...s].reduce((m, c) => m | (1n << BigInt(c.charCodeAt(0) - 65)), 0n);

test('ISA strings: V in GCC spelling, LLVM spelling, or not at all', (t) => {
  t.true(riscvArchHasVector('rv64imafdcv'));
  t.true(riscvArchHasVector('rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_v1p0_zicsr2p0_zve32f1p0'));
  t.false(riscvArchHasVector('rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zifencei2p0'));
  t.false(riscvArchHasVector('rv64imafdc_zba_zbb'));
});

test('an RVV library on a CPU without V is refused with both sides named; with V, or no V needed, it loads', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'riscv-elf-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rvv = join(dir, 'libMNN-rvv.so');
  const plain = join(dir, 'libMNN-plain.so');
  writeFileSync(rvv, riscvElf('rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_v1p0_zicsr2p0'));
  writeFileSync(plain, riscvElf('rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0'));
  t.is(riscvArchOfFile(rvv), 'rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_v1p0_zicsr2p0');
  // The JH7110's AT_HWCAP: IMAFDC, no V.
  const jh7110 = parseAuxv(auxvWith(letters('IMAFDC')))!;
  const k1 = parseAuxv(auxvWith(letters('IMAFDCV')))!;
  t.false(riscvHasLetter(jh7110, 'V'));
  t.true(riscvHasLetter(k1, 'V'));
  t.is(
    riscvVectorRefusal(rvv, false, 'AT_HWCAP=0x112d has no V bit'),
    `${rvv} is built for rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_v1p0_zicsr2p0, which needs the RISC-V vector extension (V), and this CPU has none (AT_HWCAP=0x112d has no V bit); install an MNN built without MNN_USE_RVV for this board (mnn-edge engine build plans it from the board's ISA)`,
  );
  t.is(riscvVectorRefusal(rvv, true, 'AT_HWCAP'), undefined);
  t.is(riscvVectorRefusal(plain, false, 'AT_HWCAP'), undefined);
  t.is(riscvArchOfFile(process.execPath), null, 'not a RISC-V file');
});

test('the cross-built MNN prefixes: the RVV one needs V, the plain one does not', (t) => {
  const rvv = join(process.env['MNN_ROOT_RISCV64'] || '/opt/mnn-riscv64', 'lib', 'libMNN.so');
  const plain = join(process.env['MNN_ROOT_RISCV64_NOVEC'] || '/opt/mnn-riscv64-novec', 'lib', 'libMNN.so');
  if (!existsSync(rvv) || !existsSync(plain)) {
    const line = `SKIP cross-built riscv64 MNN check: ${existsSync(rvv) ? plain : rvv} is absent`;
    console.log(line);
    t.pass(line);
    return;
  }
  t.true(riscvArchHasVector(riscvArchOfFile(rvv) ?? ''), riscvArchOfFile(rvv) ?? 'no attributes');
  t.false(riscvArchHasVector(riscvArchOfFile(plain) ?? 'v'), riscvArchOfFile(plain) ?? 'no attributes');
  t.regex(
    riscvVectorRefusal(rvv, false, 'AT_HWCAP=0x112d has no V bit') ?? '',
    /needs the RISC-V vector extension/,
  );
});
