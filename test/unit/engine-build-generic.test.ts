import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/detect.js';
import { genericEngineSpec } from '../../agent/operator/engine-build/generic.js';
import { BASE, engineBuildSpec } from '../../agent/operator/engine-build/spec.js';
import { socFixturesDir } from '../helpers/paths.js';
import { runCli } from '../helpers/run-cli.js';

// The generic arm64 engine (what the mnn-edge-engine .deb ships): built for no board in particular, with the GPU
// loaders MNN dlopens at run time, so it serves every arm64 board and uses a GPU wherever a driver is installed.

test('generic aarch64: the base options, fp16 kernels, OpenCL and Vulkan, KleidiAI off without a local tree', (t) => {
  const spec = genericEngineSpec('aarch64-linux-gnu', {});
  const o = Object.fromEntries(spec.cmake);
  for (const [k, v] of BASE) t.is(o[k], v, k);
  t.is(o['MNN_ARM82'], 'ON');
  t.is(o['MNN_OPENCL'], 'ON');
  t.is(o['MNN_VULKAN'], 'ON');
  t.is(o['MNN_KLEIDIAI'], 'OFF');
  for (const k of ['MNN_CUDA', 'MNN_QNN', 'MNN_HEXAGON', 'MNN_USE_RVV']) t.is(o[k], undefined, k);
  t.deepEqual(spec.backends, ['opencl', 'vulkan']);
  t.deepEqual(spec.warnings, []);
  t.is(spec.toolchain?.cxx, 'aarch64-linux-gnu-g++');
  t.regex(spec.reasons.join('\n'), /vulkan: built in for any board \(MNN dlopens libvulkan\.so at run time/);

  const local = Object.fromEntries(genericEngineSpec('aarch64-linux-gnu', { kleidiaiSrc: '/src/kai' }).cmake);
  t.is(local['MNN_KLEIDIAI'], 'ON');
  t.is(local['KLEIDIAI_SRC_DIR'], '/src/kai');
  const cpuOnly = genericEngineSpec('aarch64-linux-gnu', {}, { without: ['opencl', 'vulkan'] });
  t.deepEqual(cpuOnly.backends, []);
  t.is(Object.fromEntries(cpuOnly.cmake)['MNN_VULKAN'], undefined);
  t.throws(() => genericEngineSpec('riscv64-linux-gnu', {}), {
    message: /exists for aarch64-linux-gnu only/,
  });
});

test("generic aarch64 holds every arm64 board's own choice except the vendor toolkits and its CPU's fp16 gate", (t) => {
  const generic = Object.fromEntries(genericEngineSpec('aarch64-linux-gnu', {}).cmake);
  let boards = 0;
  for (const dir of readdirSync(socFixturesDir).sort()) {
    const caps = detect({ root: join(socFixturesDir, dir) });
    if (caps.cpu.architecture.value !== 'aarch64') continue;
    boards++;
    // No toolkit on the host: the board's spec has only what needs no vendor SDK.
    for (const [k, v] of engineBuildSpec(caps, {}, {}, 'aarch64-linux-gnu').cmake) {
      // A CPU without fp16 gets MNN_ARM82=OFF from its own build; the generic build has the kernels and MNN
      // uses them only where the CPU reports fp16.
      if (k === 'MNN_ARM82') continue;
      t.is(generic[k], v, `${dir}: ${k}`);
    }
  }
  t.is(boards, 5);
});

test('engine build --target aarch64-linux-gnu --generic: no board root, the GPU loaders, its own build dir', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'engine-generic-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const a = await runCli(
    { env: { HOME: home } },
    ...['engine', 'build', '--target', 'aarch64-linux-gnu', '--generic', '--dry-run'],
  );
  t.is(a.code, 0, a.err);
  const out = a.out;
  t.regex(out, /^MNN backends: cpu, opencl, vulkan\n/);
  t.regex(out, / -DCMAKE_INSTALL_PREFIX=\/opt\/mnn-aarch64 /);
  t.regex(out, / -DMNN_ARM82=ON -DMNN_KLEIDIAI=OFF -DMNN_OPENCL=ON -DMNN_VULKAN=ON$/m);
  t.true(out.includes(join(home, '.cache', 'mnn-edge', 'engine-build-aarch64-linux-gnu-generic', 'build')));

  const cases: [string[], RegExp, number][] = [
    [['--generic'], /--generic needs --target/, 2],
    [['--generic', '--target', 'aarch64-linux-gnu', '--root', socFixturesDir], /takes no --root/, 2],
    [['--target', 'aarch64-linux-gnu'], /needs --root DIR: .* \(or --generic for the packaged engine\)/, 2],
    [['--generic', '--target', 'riscv64-linux-gnu'], /exists for aarch64-linux-gnu only/, 1],
  ];
  for (const [argv, message, exit] of cases) {
    const b = await runCli('engine', 'build', ...argv, '--dry-run');
    t.is(b.code, exit, argv.join(' '));
    t.regex(b.err, message, argv.join(' '));
  }
});
