import test from 'ava';
import { compareVersions } from '../../agent/detect/backends.js';
import {
  architectureOf,
  commonWords,
  coreName,
  parseCpuinfo,
  riscvBaseLetters,
  riscvMultiLetter,
} from '../../agent/detect/cpuinfo.js';
import { parsePresentList } from '../../agent/detect/root-fs.js';
import { arm64HasHwcap, parseAuxv, riscvHasLetter } from '../../lib/auxv.js';

function auxv(pairs: [number, bigint][]): Buffer {
  const buf = Buffer.alloc((pairs.length + 1) * 16);
  pairs.forEach(([type, value], i) => {
    buf.writeBigUInt64LE(BigInt(type), i * 16);
    buf.writeBigUInt64LE(value, i * 16 + 8);
  });
  return buf; // the trailing zero pair is AT_NULL
}

test('RVV comes only from the single-letter extensions before the first underscore', (t) => {
  t.is(riscvBaseLetters('rv64imafdcv_zicbom_zvfh'), 'imafdcv');
  // zve64x, zvfh and "sv39" all contain a v: none of them is the V extension.
  t.false(riscvBaseLetters('rv64imafdc_zve64x_zvfh_svinval').includes('v'));
  t.is(riscvBaseLetters('rv64imafdcvh_zicbom'), 'imafdcvh');
  t.is(riscvBaseLetters('not an isa'), '');
  t.deepEqual(riscvMultiLetter('rv64gcv_zvl256b_Zvfh'), ['zvl256b', 'zvfh']);
});

test('auxv: page size and HWCAP words, AT_NULL required', (t) => {
  const a = parseAuxv(
    auxv([
      [6, 16384n],
      [16, 0xce119fffn],
      [26, 1n << 13n],
    ]),
  );
  t.deepEqual(a, { pageSize: 16384, hwcap: 0xce119fffn, hwcap2: 1n << 13n });
  t.true(arm64HasHwcap(a!, 'asimddp'));
  t.true(arm64HasHwcap(a!, 'asimdhp'));
  t.false(arm64HasHwcap(a!, 'sve'));
  t.true(arm64HasHwcap(a!, 'i8mm'));
  t.false(arm64HasHwcap(a!, 'bf16'));
  const noTerminator = auxv([[6, 4096n]]).subarray(0, 16);
  t.is(parseAuxv(noTerminator), null);
  t.is(parseAuxv(Buffer.alloc(15)), null);
  const rv = parseAuxv(auxv([[16, 0x20112dn]]))!;
  t.true(riscvHasLetter(rv, 'v'));
  t.false(riscvHasLetter(parseAuxv(auxv([[16, 0x112dn]]))!, 'v'));
  // A kernel without AT_HWCAP2 has none of its bits.
  t.false(arm64HasHwcap(parseAuxv(auxv([[16, 1n]]))!, 'sve2'));
  t.is(arm64HasHwcap(parseAuxv(auxv([[6, 4096n]]))!, 'sve2'), null);
});

test('cpuinfo: tabs or spaces, trailer blocks, architecture, core names', (t) => {
  const arm = parseCpuinfo(
    'processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0b\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 5\n',
  );
  t.is(arm.processors.length, 1);
  t.is(arm.trailer.get('model'), 'Raspberry Pi 5');
  t.deepEqual(architectureOf(arm), { value: 'aarch64', because: 'CPU architecture: 8' });
  t.is(coreName(arm.processors[0]!), 'Cortex-A76');
  const rv = parseCpuinfo(
    'processor       : 0\nhart            : 1\nisa             : rv64imafdc_zba\nuarch           : sifive,u74-mc\n',
  );
  t.deepEqual(architectureOf(rv), { value: 'riscv64', because: 'isa: rv64imafdc' });
  t.is(coreName(rv.processors[0]!), 'sifive,u74-mc');
  const x86 = parseCpuinfo(
    'processor : 0\nvendor_id : GenuineIntel\nflags : fpu lm avx2\nmodel name : Intel(R) Xeon(R)\n',
  );
  t.is(architectureOf(x86)?.value, 'x86_64');
  t.is(coreName(x86.processors[0]!), 'Intel Xeon');
  t.is(architectureOf(parseCpuinfo('nothing here')), null);
  t.is(
    coreName(parseCpuinfo('processor : 0\nCPU implementer : 0x41\nCPU part : 0xfff\n').processors[0]!),
    'Arm part 0xfff',
  );
});

test('features common to all cores are the intersection', (t) => {
  const c = parseCpuinfo('processor : 0\nFeatures : a b c\n\nprocessor : 1\nFeatures : b c d\n');
  t.deepEqual([...commonWords(c.processors, 'features')!].sort(), ['b', 'c']);
  t.is(commonWords(c.processors, 'flags'), null);
});

test('present.txt: absolute paths only, blanks and comments ignored', (t) => {
  t.deepEqual(parsePresentList('/dev/a\n\n# comment\nrelative\n  /usr/lib/b.so  \n'), [
    '/dev/a',
    '/usr/lib/b.so',
  ]);
});

test('versions compare numerically', (t) => {
  t.true(compareVersions('0.9.6', '0.9.7') < 0);
  t.true(compareVersions('0.10.0', '0.9.7') > 0);
  t.is(compareVersions('1.0', '1.0.0'), 0);
});
