import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/detect.js';
import type { AcceleratorInfo, Capabilities, CpuFeatureName, MnnBackend } from '../../lib/capabilities.js';
import { socFixturesDir } from '../helpers/paths.js';

// One test per captured board: the values asserted are the ones each fixture's SOURCES.md marks as captured or
// documented, so a regression in a probe shows up as the board it breaks.

const FIXED_NOW = () => new Date('2026-01-01T00:00:00Z');
const board = (dir: string): Capabilities => detect({ root: join(socFixturesDir, dir), now: FIXED_NOW });

function acc<K extends AcceleratorInfo['kind']>(caps: Capabilities, kind: K) {
  const found = caps.accelerators.find((a) => a.kind === kind);
  if (!found) throw new Error(`no ${kind} accelerator in ${caps.root}`);
  return found as Extract<AcceleratorInfo, { kind: K }>;
}

function featuresOn(caps: Capabilities): CpuFeatureName[] {
  return (Object.keys(caps.cpu.features) as CpuFeatureName[]).filter(
    (k) => caps.cpu.features[k].value === true,
  );
}

function usable(caps: Capabilities): MnnBackend[] {
  return caps.backends.filter((b) => b.usable).map((b) => b.backend);
}

function clusters(caps: Capabilities): string[] {
  return caps.cpu.clusters.map((c) => `${c.coreCount}x${c.core}@${c.maxFreqKHz}`);
}

test('QCS9075 IQ-9075 EVK: soc0 wins over a DT that says qcs9100; two NSPs of HTP v73', (t) => {
  const caps = board('qcom-qcs9075-iq9075-evk');
  t.is(caps.soc.family.value, 'qcs9075');
  t.is(caps.soc.vendor.value, 'Qualcomm');
  t.is(caps.soc.name.value, 'QCS9075');
  t.is(caps.soc.socId.value, '676');
  t.is(caps.soc.revision.value, '2.0');
  t.deepEqual(caps.board.compatible.value, ['qcom,lemans-evk', 'qcom,qcs9100', 'qcom,sa8775p']);
  t.is(caps.board.model.value, 'Qualcomm Technologies, Inc. Lemans EVK');
  // The evidence shows both the soc0 value that won and the compatible that names a sibling die.
  t.true(caps.soc.family.evidence.some((e) => e.kind === 'file' && e.value === 'QCS9075'));
  t.true(caps.soc.family.evidence.some((e) => e.kind === 'file' && e.value === 'qcom,sa8775p'));
  t.is(caps.cpu.architecture.value, 'aarch64');
  t.deepEqual(clusters(caps), ['8xCortex-A78C@null']);
  t.deepEqual(featuresOn(caps), ['fp16', 'dotprod']);
  t.false(caps.cpu.features.i8mm.value);
  const htp = acc(caps, 'hexagon-htp');
  t.is(htp.arch.value, 'v73');
  t.is(htp.nspCount.value, 2);
  t.deepEqual(htp.fastrpcNodes, [
    '/dev/fastrpc-cdsp',
    '/dev/fastrpc-cdsp-secure',
    '/dev/fastrpc-cdsp1',
    '/dev/fastrpc-cdsp1-secure',
  ]);
  t.true(htp.qnnLibraries.includes('/usr/lib/libQnnHtpV73Stub.so'));
  const gpu = acc(caps, 'gpu');
  t.is(gpu.vendor, 'qualcomm-adreno');
  t.is(gpu.name.value, 'Adreno 663');
  t.deepEqual(
    caps.thermal.map((z) => [z.type, z.tempMilliC.value]),
    [
      ['cpu-0-0-0-thermal', 55000],
      ['nsp-0-0-0-thermal', 61000],
      ['ddrss-0-thermal', 50000],
    ],
  );
  t.deepEqual(usable(caps), ['cpu', 'nn', 'qnn', 'hexagon']);
  t.regex(caps.backends.find((b) => b.backend === 'opencl')!.reasons[0]!, /no OpenCL library/);
  t.is(caps.memory.totalBytes.value, null);
  t.deepEqual(caps.memory.totalBytes.evidence, [{ kind: 'missing', path: '/proc/meminfo' }]);
});

test('QCS6490 RB3 Gen 2: reported as QCM6490 / 497 by this kernel, family qcs6490, HTP v68 without direct Hexagon', (t) => {
  const caps = board('qcom-qcs6490-rb3gen2');
  t.is(caps.soc.family.value, 'qcs6490');
  t.is(caps.soc.name.value, 'QCM6490');
  t.is(caps.soc.socId.value, '497');
  t.is(caps.soc.revision.value, '1.0');
  t.is(caps.board.model.value, 'Qualcomm Technologies, Inc. Robotics RB3gen2');
  t.deepEqual(clusters(caps), ['1xCortex-A78@2707200', '3xCortex-A78@2400000', '4xCortex-A55@1958400']);
  t.deepEqual(caps.cpu.clusters[0]!.cpus, [7]);
  t.deepEqual(featuresOn(caps), ['fp16', 'dotprod']);
  const htp = acc(caps, 'hexagon-htp');
  t.is(htp.arch.value, 'v68');
  t.is(htp.nspCount.value, 1);
  t.is(acc(caps, 'gpu').name.value, 'Adreno 643');
  t.deepEqual(usable(caps), ['cpu', 'nn', 'qnn']);
  t.deepEqual(caps.backends.find((b) => b.backend === 'hexagon')!.reasons, [
    "HTP v68 is older than v73, the oldest MNN's Hexagon ops library targets",
  ]);
  t.deepEqual(
    caps.thermal.map((z) => z.type),
    ['cpu0-thermal', 'gpuss0-thermal', 'nspss0-thermal'],
  );
});

test('RK3588 ROCK 5B: vendor RKNPU 0.9.6 with 3 cores on the DRM render node, Mali-G610 without OpenCL', (t) => {
  const caps = board('rockchip-rk3588-rock5b');
  t.is(caps.soc.family.value, 'rk3588');
  t.is(caps.soc.name.value, 'RK3588');
  t.is(caps.soc.socId.value, null);
  t.deepEqual(caps.soc.socId.evidence, [{ kind: 'missing', path: '/sys/devices/soc0/soc_id' }]);
  t.is(caps.board.vendor.value, 'Radxa');
  t.is(caps.board.model.value, 'Radxa ROCK 5B');
  t.deepEqual(clusters(caps), ['4xCortex-A76@2400000', '4xCortex-A55@1800000']);
  t.deepEqual(caps.cpu.clusters[0]!.cpus, [4, 5, 6, 7]);
  t.deepEqual(featuresOn(caps), ['fp16', 'dotprod']);
  const npu = acc(caps, 'rknpu');
  t.is(npu.driver.value, 'rknpu-vendor');
  t.is(npu.driverVersion.value, '0.9.6');
  t.is(npu.cores.value, 3);
  t.is(npu.deviceNode.value, '/dev/dri/renderD129');
  t.true(npu.deviceNode.evidence.some((e) => e.kind === 'inferred'));
  t.deepEqual(npu.libraries, ['/usr/lib/librknnrt.so']);
  const gpu = acc(caps, 'gpu');
  t.is(gpu.vendor, 'arm-mali');
  t.is(gpu.name.value, 'Mali-G610');
  t.deepEqual(gpu.deviceNodes, ['/dev/mali0', '/dev/dri/renderD128']);
  t.deepEqual(usable(caps), ['cpu', 'rknn']);
  t.is(caps.thermal.length, 7);
  t.is(caps.thermal[6]!.type, 'npu-thermal');
});

test('Jetson Orin Nano Super: Tegra234 via the -super compatible, L4T R36.4.7, CUDA 8.7, no DLA', (t) => {
  const caps = board('nvidia-jetson-orin-nano-super');
  t.is(caps.soc.family.value, 'jetson-orin');
  t.is(caps.soc.name.value, 'Tegra234');
  t.is(caps.soc.socId.value, '35');
  t.is(caps.board.model.value, 'NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super');
  t.deepEqual(clusters(caps), ['6xCortex-A78AE@null']);
  t.deepEqual(featuresOn(caps), ['fp16', 'dotprod']);
  const gpu = acc(caps, 'nvidia-gpu');
  t.is(gpu.l4tRelease.value, 'R36.4.7');
  t.is(gpu.jetpack.value, '6.2');
  t.is(gpu.computeCapability.value, '8.7');
  t.deepEqual(gpu.computeCapability.evidence, [
    { kind: 'table', key: 'cudaComputeCapability', profile: 'jetson-orin', note: 'GA10B (Tegra234)' },
  ]);
  t.is(gpu.dlaCount.value, 0);
  t.is(gpu.name.value, 'Jetson Orin Nano 8GB (devkit) Ampere GPU');
  t.deepEqual(gpu.libraries, [
    '/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1',
    '/usr/local/cuda/lib64/libcudart.so.12',
  ]);
  t.deepEqual(usable(caps), ['cpu', 'cuda']);
  t.is(caps.accelerators.length, 1);
});

test('Raspberry Pi 5: generic ARM64, BCM2712, 16 KiB pages, v3d GPU whose Vulkan userspace MNN cannot load, no NPU', (t) => {
  const caps = board('rpi5-bcm2712');
  t.is(caps.soc.family.value, 'arm64-generic');
  t.is(caps.soc.name.value, 'BCM2712');
  t.is(caps.board.vendor.value, 'Raspberry Pi');
  t.is(caps.board.model.value, 'Raspberry Pi 5 Model B Rev 1.0');
  t.deepEqual(clusters(caps), ['4xCortex-A76@2400000']);
  t.deepEqual(featuresOn(caps), ['fp16', 'dotprod']);
  t.is(caps.memory.pageSize.value, 16384);
  t.is(caps.memory.totalBytes.value, 8242176 * 1024);
  t.is(caps.memory.availableBytes.value, null);
  t.deepEqual(
    caps.accelerators.map((a) => a.kind),
    ['gpu'],
  );
  t.is(acc(caps, 'gpu').vendor, 'broadcom-v3d');
  // The capture has the render node and libvulkan.so.1, but no ICD registration and not the libvulkan.so MNN
  // dlopens: each is its own failed step, the first one is the reason.
  const vulkan = caps.backends.find((b) => b.backend === 'vulkan')!;
  t.deepEqual(
    vulkan.steps!.map((s) => `${s.step}:${s.status}`),
    [
      'device-node:ok',
      'icd:fail',
      'loader:fail',
      'device-kind:unchecked',
      'compiled-in:unchecked',
      'init-probe:unchecked',
    ],
  );
  t.regex(
    vulkan.reasons[0]!,
    /^VideoCore VII \(V3D 7.1\) present \(\/dev\/dri\/renderD128\) but no Vulkan library/,
  );
  t.regex(vulkan.reasons[1]!, /^Vulkan loader present as libvulkan\.so\.1 only/);
  t.deepEqual(usable(caps), ['cpu']);
});

test('SpacemiT K1 BPI-F3: vendor k1-x DT, X60 without a uarch line, RVV with VLEN 256 from the core table', (t) => {
  const caps = board('spacemit-k1-bpi-f3');
  t.is(caps.soc.family.value, 'spacemit-k1');
  t.is(caps.soc.name.value, 'K1');
  t.is(caps.board.model.value, 'spacemit k1-x deb1 board');
  t.is(caps.cpu.architecture.value, 'riscv64');
  t.deepEqual(clusters(caps), ['8xSpacemit X60@null']);
  t.true(caps.cpu.features.rvv.value);
  t.is(caps.cpu.features.rvvVlen.value, 256);
  t.deepEqual(caps.cpu.features.rvvVlen.evidence, [
    { kind: 'table', key: 'core x60', profile: 'spacemit-k1' },
  ]);
  t.true(caps.cpu.features.ime.value);
  t.false(caps.cpu.features.ime2.value);
  t.true(caps.cpu.features.fp16.value);
  t.false(caps.cpu.features.dotprod.value);
  t.is(caps.memory.totalBytes.value, 3898372 * 1024);
  t.deepEqual(usable(caps), ['cpu']);
});

test('SpacemiT K3 CoM260: X100 harts with uarch, VLEN 256, IME2 on the AI cores, set_ai_thread gate', (t) => {
  const caps = board('spacemit-k3-com260');
  t.is(caps.soc.family.value, 'spacemit-k3');
  t.is(caps.soc.name.value, 'K3');
  t.is(caps.board.model.value, 'SpacemiT K3 Com260 IFX');
  t.deepEqual(clusters(caps), ['8xspacemit,x100@null']);
  t.true(caps.cpu.features.rvv.value);
  t.is(caps.cpu.features.rvvVlen.value, 256);
  t.true(caps.cpu.features.ime.value);
  t.true(caps.cpu.features.ime2.value);
  t.true(caps.cpu.features.bf16.value);
  const ai = acc(caps, 'spacemit-ai');
  t.true(ai.aiThreadGate.value);
  t.deepEqual(ai.deviceNodes, ['/dev/tcm', '/dev/ai_dma', '/dev/aidma_list', '/proc/set_ai_thread']);
  t.is(caps.memory.totalBytes.value, 16357785 * 1024);
  t.deepEqual(usable(caps), ['cpu']);
});

test('StarFive JH7110: generic RISC-V without V (rv64imafdc), VLEN not applicable', (t) => {
  const caps = board('starfive-jh7110-visionfive2');
  t.is(caps.soc.family.value, 'riscv-generic');
  t.is(caps.soc.name.value, 'JH7110');
  t.is(caps.board.vendor.value, 'StarFive');
  t.false(caps.cpu.features.rvv.value);
  t.is(caps.cpu.features.rvvVlen.value, null);
  t.false(caps.cpu.features.ime.value);
  t.deepEqual(featuresOn(caps), []);
  // processor 0 is hart 1 on this SoC: the CPU numbering follows `processor`, not `hart`.
  t.deepEqual(
    caps.cpu.clusters.map((c) => c.cpus),
    [[0, 1, 2, 3]],
  );
  t.deepEqual(clusters(caps), ['4xsifive,u74-mc@1500000']);
  t.deepEqual(caps.accelerators, []);
  t.deepEqual(usable(caps), ['cpu']);
});

test('x86-64 Zen 5 dev host: no device tree, AVX-512 VNNI/BF16, no accelerators', (t) => {
  const caps = board('x86_64-devhost-zen5');
  t.is(caps.soc.family.value, 'x86-64');
  t.is(caps.soc.vendor.value, 'AuthenticAMD');
  t.is(caps.soc.name.value, 'AMD Ryzen 9 9950X 16-Core Processor');
  t.is(caps.board.compatible.value, null);
  t.true(caps.board.compatible.evidence.some((e) => e.kind === 'missing'));
  t.is(caps.cpu.architecture.value, 'x86_64');
  t.deepEqual(featuresOn(caps), ['bf16', 'avx2', 'avx512f', 'avx512vnni', 'avx512bf16', 'avxVnni']);
  t.false(caps.cpu.features.fp16.value);
  t.deepEqual(caps.accelerators, []);
  t.deepEqual(usable(caps), ['cpu']);
});

test('this host, live from /: never throws and finds x86_64 and avx2 when /proc/cpuinfo lists them', (t) => {
  const caps = detect();
  t.is(caps.root, '/');
  t.true(caps.backends.find((b) => b.backend === 'cpu')!.usable);
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  if (/^vendor_id\s*:/m.test(cpuinfo) && /^flags\s*:.*\blm\b/m.test(cpuinfo)) {
    t.is(caps.cpu.architecture.value, 'x86_64');
    t.is(caps.soc.family.value, 'x86-64');
  }
  if (/^flags\s*:.*\bavx2\b/m.test(cpuinfo)) t.true(caps.cpu.features.avx2.value);
  t.true((caps.cpu.logicalCpus.value ?? 0) >= 1);
  t.true((caps.memory.totalBytes.value ?? 0) > 0);
});
