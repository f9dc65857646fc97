import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/detect.js';
import { describeEvidence } from '../../agent/detect/report.js';
import { socFixturesDir } from '../helpers/paths.js';

// An arm64 process under QEMU user mode on an x86 machine: /proc/cpuinfo is the host's file, the auxiliary
// vector is the emulated CPU's. The process's own architecture wins, features come from AT_HWCAP/AT_HWCAP2, and
// every claim says which source it came from.

function auxv(pairs: [number, bigint][]): Buffer {
  const b = Buffer.alloc((pairs.length + 1) * 16);
  pairs.forEach(([type, value], i) => {
    b.writeBigUInt64LE(BigInt(type), i * 16);
    b.writeBigUInt64LE(value, i * 16 + 8);
  });
  return b;
}

const bit = (n: number) => 1n << BigInt(n);
// QEMU 7.2 -cpu max: fphp, asimdhp, asimddp, sve; sve2, i8mm, bf16 (no SME2).
const QEMU_MAX = auxv([
  [6, 4096n],
  [16, bit(9) | bit(10) | bit(20) | bit(22)],
  [26, bit(1) | bit(13) | bit(14)],
]);

function emulatedRoot(t: { teardown(fn: () => void): void }, auxvBytes: Buffer): string {
  const root = mkdtempSync(join(tmpdir(), 'detect-emulated-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc', 'self'), { recursive: true });
  copyFileSync(join(socFixturesDir, 'x86_64-devhost-zen5', 'proc', 'cpuinfo'), join(root, 'proc', 'cpuinfo'));
  writeFileSync(join(root, 'proc', 'self', 'auxv'), auxvBytes);
  writeFileSync(join(root, 'present.txt'), '');
  return root;
}

test('arm64 process with the host x86 cpuinfo: aarch64, features from the auxiliary vector, the disagreement said', (t) => {
  const caps = detect({ root: emulatedRoot(t, QEMU_MAX), processArch: 'arm64' });
  t.is(caps.cpu.architecture.value, 'aarch64');
  const why = caps.cpu.architecture.evidence.map(describeEvidence).join('; ');
  t.regex(why, /this process is aarch64 \(process\.arch arm64\) while \/proc\/cpuinfo describes x86_64/);
  const f = caps.cpu.features;
  for (const name of ['fp16', 'dotprod', 'i8mm', 'bf16', 'sve', 'sve2'] as const) {
    t.is(f[name].value, true, name);
    t.true(
      f[name].evidence.some((e) => e.kind === 'file' && e.path === '/proc/self/auxv'),
      `${name} says it came from auxv`,
    );
    t.false(
      f[name].evidence.some((e) => e.kind === 'file' && e.path === '/proc/cpuinfo'),
      `${name}: the foreign cpuinfo is not a source`,
    );
  }
  t.is(f.sme2.value, false);
  t.is(f.avx2.value, false, 'x86 features of the host are not claimed for the arm64 process');
});

test('the same files read by an x86 process stay x86: the process architecture decides, not the auxv bytes', (t) => {
  const caps = detect({ root: emulatedRoot(t, QEMU_MAX), processArch: 'x64' });
  t.is(caps.cpu.architecture.value, 'x86_64');
  t.is(caps.cpu.features.avx2.value, true);
});

test('a board whose cpuinfo and HWCAP disagree on a feature: the auxiliary vector wins and the claim says both', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'detect-disagree-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc', 'self'), { recursive: true });
  writeFileSync(
    join(root, 'proc', 'cpuinfo'),
    'processor\t: 0\nFeatures\t: fp asimd fphp asimdhp asimddp\nCPU architecture: 8\nCPU part\t: 0xd0b\n\n',
  );
  // HWCAP lacks asimddp (bit 20): a kernel that hides dotprod from user space.
  writeFileSync(join(root, 'proc', 'self', 'auxv'), auxv([[16, bit(9) | bit(10)]]));
  writeFileSync(join(root, 'present.txt'), '');
  const caps = detect({ root, processArch: 'arm64' });
  const dot = caps.cpu.features.dotprod;
  t.is(dot.value, false);
  t.regex(
    describeEvidence(dot.evidence[0]!),
    /sources disagree: \/proc\/cpuinfo says present, AT_HWCAP says absent; the auxiliary vector wins/,
  );
  t.is(caps.cpu.features.fp16.value, true);
  t.is(caps.cpu.features.fp16.evidence.length, 2, 'cpuinfo and auxv both cited when they agree');
});
