import {
  mkdirSync,
  mkdtempSync,
  readFileSync as readFile,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { applyEngineBackends, detect } from '../../agent/detect/detect.js';
import { formatReport } from '../../agent/detect/report.js';
import { capabilitiesSchema } from '../../agent/detect/schema.js';
import type { Capabilities } from '../../lib/capabilities.js';
import { validate } from '../../lib/schema.js';
import { socFixturesDir } from '../helpers/paths.js';

// Whatever a board presents, detect() returns a document with unknowns and evidence, never an exception.

function tree(files: Record<string, string | Buffer>): string {
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-detect-'));
  for (const [rel, content] of Object.entries(files)) {
    const full = join(root, rel);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  return root;
}

function valid(t: { deepEqual: (a: unknown, b: unknown) => void }, caps: Capabilities): void {
  t.deepEqual(validate(capabilitiesSchema, JSON.parse(JSON.stringify(caps))), []);
}

/** Deterministic binary junk: NULs, high bytes, control characters, a stray colon. */
const JUNK = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 131 + 7) % 256));

test('an empty root gives unknowns with "missing" evidence and only the CPU backend', (t) => {
  const root = tree({});
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const caps = detect({ root });
  valid(t, caps);
  t.is(caps.cpu.architecture.value, null);
  t.deepEqual(caps.cpu.architecture.evidence, [{ kind: 'missing', path: '/proc/cpuinfo' }]);
  t.is(caps.soc.family.value, null);
  t.is(caps.board.model.value, null);
  t.deepEqual(caps.cpu.clusters, []);
  t.is(caps.memory.pageSize.value, null);
  t.deepEqual(caps.memory.pageSize.evidence, [{ kind: 'missing', path: '/proc/self/auxv' }]);
  t.is(caps.cpu.features.fp16.value, null);
  t.deepEqual(caps.accelerators, []);
  t.deepEqual(
    caps.backends.filter((b) => b.usable).map((b) => b.backend),
    ['cpu'],
  );
});

test('the report of an empty root spells out unknowns and their reasons', (t) => {
  const root = tree({});
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const text = formatReport(detect({ root }), null);
  t.regex(text, /^ {2}family +unknown {2}\[\/sys\/firmware\/devicetree\/base\/compatible missing; /m);
  t.regex(text, /^ {2}architecture +unknown {2}\[\/proc\/cpuinfo missing\]$/m);
  t.regex(text, /^ {2}\(none\)/m);
  t.regex(text, /^ {2}cpu +usable +always available \(unknown architecture\)$/m);
});

test('empty cpuinfo, compatible and meminfo are unknowns that say why', (t) => {
  const root = tree({
    'proc/cpuinfo': '',
    'proc/meminfo': '',
    'proc/self/auxv': '',
    'sys/firmware/devicetree/base/compatible': '',
    'sys/firmware/devicetree/base/model': '\0',
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const caps = detect({ root });
  valid(t, caps);
  t.deepEqual(caps.cpu.architecture.evidence, [
    { kind: 'missing', path: '/proc/cpuinfo', detail: 'no "processor : N" entries (empty or not cpuinfo)' },
  ]);
  t.is(caps.board.compatible.value, null);
  t.deepEqual(caps.board.compatible.evidence, [
    {
      kind: 'missing',
      path: '/sys/firmware/devicetree/base/compatible',
      detail: 'no vendor,name entries (empty or not a compatible list)',
    },
  ]);
  // With no usable DT model the DMI product name (x86) is tried too; both are cited.
  t.deepEqual(caps.board.model.evidence, [
    { kind: 'missing', path: '/sys/firmware/devicetree/base/model', detail: 'not a printable model string' },
    { kind: 'missing', path: '/sys/class/dmi/id/product_name' },
  ]);
  t.deepEqual(caps.memory.totalBytes.evidence, [
    { kind: 'missing', path: '/proc/meminfo', detail: 'no MemTotal line' },
  ]);
  t.deepEqual(caps.memory.pageSize.evidence, [
    { kind: 'missing', path: '/proc/self/auxv', detail: 'not a 64-bit auxv vector' },
  ]);
});

test('binary junk in cpuinfo, compatible, auxv and soc0 never becomes a name', (t) => {
  const root = tree({
    'proc/cpuinfo': JUNK,
    'proc/self/auxv': JUNK.subarray(0, 100),
    'sys/firmware/devicetree/base/compatible': JUNK,
    'sys/firmware/devicetree/base/model': JUNK,
    'sys/devices/soc0/machine': JUNK,
    'sys/devices/soc0/soc_id': JUNK,
    'sys/class/thermal/thermal_zone0/temp': JUNK,
    'sys/class/thermal/thermal_zone0/type': 'cpu-thermal\n',
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const caps = detect({ root });
  valid(t, caps);
  t.is(caps.cpu.architecture.value, null);
  t.is(caps.board.compatible.value, null);
  t.is(caps.board.model.value, null);
  t.is(caps.soc.name.value, null);
  t.is(caps.soc.socId.value, null);
  t.deepEqual(caps.soc.socId.evidence, [
    { kind: 'missing', path: '/sys/devices/soc0/soc_id', detail: 'empty or not printable' },
  ]);
  t.is(caps.memory.pageSize.value, null);
  t.is(caps.thermal[0]!.tempMilliC.value, null);
  t.deepEqual(caps.thermal[0]!.tempMilliC.evidence, [
    { kind: 'missing', path: '/sys/class/thermal/thermal_zone0/temp', detail: 'not a number' },
  ]);
});

test('junk lines mixed into a real cpuinfo are skipped, the real entries still count', (t) => {
  const root = tree({
    'proc/cpuinfo':
      'processor\t: 0\nFeatures\t: fp asimd fphp asimdhp asimddp i8mm\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd4b\n' +
      '\u0001\u0002garbage without colon\n:::\n\nprocessor\t: 1\nFeatures\t: fp asimd fphp asimdhp asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd4b\n',
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const caps = detect({ root });
  t.is(caps.cpu.logicalCpus.value, 2);
  t.true(caps.cpu.features.dotprod.value);
  // Only cpu0 lists i8mm: a thread may run on either core, so the common set decides.
  t.false(caps.cpu.features.i8mm.value);
  t.deepEqual(caps.cpu.features.i8mm.evidence, [
    { kind: 'file', path: '/proc/cpuinfo', value: 'Features lacks i8mm' },
  ]);
});

test('without a Features line the arm64 features come from AT_HWCAP/AT_HWCAP2', (t) => {
  const auxv = Buffer.alloc(48);
  auxv.writeBigUInt64LE(16n, 0);
  auxv.writeBigUInt64LE((1n << 9n) | (1n << 10n) | (1n << 20n), 8); // fphp, asimdhp, asimddp
  auxv.writeBigUInt64LE(26n, 16);
  auxv.writeBigUInt64LE((1n << 1n) | (1n << 13n), 24); // sve2, i8mm
  const root = tree({
    'proc/cpuinfo': 'processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd81\n',
    'proc/self/auxv': auxv,
  });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const f = detect({ root }).cpu.features;
  t.true(f.fp16.value);
  t.true(f.dotprod.value);
  t.true(f.i8mm.value);
  t.true(f.sve2.value);
  t.false(f.sve.value);
  t.false(f.bf16.value);
  t.deepEqual(f.i8mm.evidence, [
    { kind: 'file', path: '/proc/self/auxv', value: 'AT_HWCAP2=0x2002: i8mm set' },
  ]);
});

function eacces(paths: string[]) {
  return (full: string) => {
    if (paths.some((p) => full.endsWith(p))) {
      const err = new Error(`EACCES: permission denied, open '${full}'`) as NodeJS.ErrnoException;
      err.code = 'EACCES';
      throw err;
    }
    return readFile(full);
  };
}

test('a root-only debugfs file is an unknown with "permission denied", the NPU is still found', (t) => {
  const caps = detect({
    root: join(socFixturesDir, 'rockchip-rk3588-rock5b'),
    readFile: eacces(['/sys/kernel/debug/rknpu/version', '/sys/kernel/debug/rknpu/load']),
  });
  const npu = caps.accelerators.find((a) => a.kind === 'rknpu');
  if (npu?.kind !== 'rknpu') return t.fail('no rknpu');
  t.is(npu.driver.value, 'rknpu-vendor');
  t.is(npu.driverVersion.value, null);
  t.deepEqual(npu.driverVersion.evidence, [
    { kind: 'unreadable', path: '/sys/kernel/debug/rknpu/version', error: 'permission denied' },
  ]);
  // Without the load file the core count falls back to the profile table, citing both.
  t.is(npu.cores.value, 3);
  t.deepEqual(npu.cores.evidence, [
    { kind: 'table', key: 'npuCores', profile: 'rk3588' },
    { kind: 'unreadable', path: '/sys/kernel/debug/rknpu/load', error: 'permission denied' },
  ]);
  const rknn = caps.backends.find((b) => b.backend === 'rknn')!;
  t.true(rknn.usable);
  t.regex(rknn.reasons[0]!, /version unknown/);
});

test('unreadable cpuinfo and soc0 give unknowns with "permission denied" and no exception', (t) => {
  const caps = detect({
    root: join(socFixturesDir, 'qcom-qcs9075-iq9075-evk'),
    readFile: eacces(['/proc/cpuinfo', '/sys/devices/soc0/machine', '/sys/devices/soc0/soc_id']),
  });
  t.is(caps.cpu.architecture.value, null);
  t.deepEqual(caps.cpu.architecture.evidence, [
    { kind: 'unreadable', path: '/proc/cpuinfo', error: 'permission denied' },
  ]);
  t.deepEqual(caps.soc.socId.evidence, [
    { kind: 'unreadable', path: '/sys/devices/soc0/soc_id', error: 'permission denied' },
  ]);
  // Without cpuinfo the architecture is unknown, so no feature is claimed either way.
  t.is(caps.cpu.features.dotprod.value, null);
  t.deepEqual(caps.cpu.features.dotprod.evidence, [
    { kind: 'unreadable', path: '/proc/cpuinfo', error: 'permission denied' },
  ]);
  // Without soc0 the compatible decides the family; the name is what the DT says, not a guess.
  t.is(caps.soc.family.value, 'qcs9075');
  t.is(caps.soc.name.value, 'QCS9100');
});

test('other read errors (EIO) are reported with their own word', (t) => {
  const caps = detect({
    root: join(socFixturesDir, 'rpi5-bcm2712'),
    readFile: (p) => {
      if (p.endsWith('/proc/meminfo')) throw Object.assign(new Error('EIO'), { code: 'EIO' });
      return readFile(p);
    },
  });
  t.deepEqual(caps.memory.totalBytes.evidence, [
    { kind: 'unreadable', path: '/proc/meminfo', error: 'I/O error' },
  ]);
});

test('a symlink in a fixture that points outside the root is not followed', (t) => {
  const root = tree({});
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'proc'), { recursive: true });
  symlinkSync('/proc/meminfo', join(root, 'proc/meminfo'));
  const caps = detect({ root });
  t.deepEqual(caps.memory.totalBytes.evidence, [
    { kind: 'unreadable', path: '/proc/meminfo', error: 'resolves outside the root' },
  ]);
});

test('presentPaths replaces present.txt: without the QNN stub the arch comes from the table', (t) => {
  const caps = detect({
    root: join(socFixturesDir, 'qcom-qcs9075-iq9075-evk'),
    presentPaths: ['/dev/fastrpc-cdsp', '/usr/lib/libcdsprpc.so'],
  });
  const htp = caps.accelerators.find((a) => a.kind === 'hexagon-htp');
  if (htp?.kind !== 'hexagon-htp') return t.fail('no hexagon');
  t.deepEqual(htp.arch.evidence, [{ kind: 'table', key: 'hexagonArch', profile: 'qcs9075' }]);
  // One FastRPC domain visible but the table knows two NSPs (older kernels name NSP1 "cdsp" too).
  t.is(htp.nspCount.value, 2);
  const qnn = caps.backends.find((b) => b.backend === 'qnn')!;
  t.false(qnn.usable);
  t.deepEqual(qnn.reasons, [
    'Hexagon v73 HTP present but missing libQnnHtp.so, libQnnSystem.so, libQnnHtpV73Stub.so',
  ]);
  t.true(caps.backends.find((b) => b.backend === 'hexagon')!.usable);
});

test('engineBackends makes a backend the engine lacks unusable: "MNN built without X"', (t) => {
  const caps = detect({
    root: join(socFixturesDir, 'qcom-qcs9075-iq9075-evk'),
    engineBackends: ['cpu', 'qnn'],
  });
  t.deepEqual(caps.engineBackends, ['cpu', 'qnn']);
  const hexagon = caps.backends.find((b) => b.backend === 'hexagon')!;
  t.false(hexagon.usable);
  t.is(hexagon.reasons[0], 'MNN built without hexagon');
  t.true(caps.backends.find((b) => b.backend === 'qnn')!.usable);
  t.true(caps.backends.find((b) => b.backend === 'nn')!.usable);
  t.true(caps.backends.find((b) => b.backend === 'cpu')!.usable);
});

test('engine backends applied after detection give the same document as detecting with them', (t) => {
  const root = join(socFixturesDir, 'qcom-qcs9075-iq9075-evk');
  const now = () => new Date(0);
  const direct = detect({ root, engineBackends: ['cpu', 'qnn'], now });
  const later = applyEngineBackends(detect({ root, now }), ['cpu', 'qnn']);
  t.deepEqual(later, direct);
  t.is(applyEngineBackends(later, ['cpu']), later, 'applied once: a second probe does not stack reasons');
});

test('every fixture document validates against the exported schema', (t) => {
  for (const dir of [
    'nvidia-jetson-orin-nano-super',
    'qcom-qcs6490-rb3gen2',
    'qcom-qcs9075-iq9075-evk',
    'rockchip-rk3588-rock5b',
    'rpi5-bcm2712',
    'spacemit-k1-bpi-f3',
    'spacemit-k3-com260',
    'starfive-jh7110-visionfive2',
    'x86_64-devhost-zen5',
  ])
    valid(t, detect({ root: join(socFixturesDir, dir) }));
});

test('the schema rejects a document with a wrong claim shape', (t) => {
  const caps = JSON.parse(JSON.stringify(detect({ root: join(socFixturesDir, 'rpi5-bcm2712') })));
  caps.soc.family.value = 'pentium';
  caps.cpu.features.fp16 = { value: 'yes', evidence: [] };
  const errors = validate(capabilitiesSchema, caps).map((e) => e.path);
  t.true(errors.includes('soc.family.value'));
  t.true(errors.includes('cpu.features.fp16.value'));
});
