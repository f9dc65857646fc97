import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/detect.js';
import { type CrossTarget, toolchainFileText } from '../../agent/operator/engine-build/cross.js';
import { findBuildHost } from '../../agent/operator/engine-build/sdk.js';
import {
  type BuildHost,
  cmakeConfigureArgs,
  engineBuildSpec,
} from '../../agent/operator/engine-build/spec.js';
import { buildSteps, formatStep, progressOf } from '../../agent/operator/engine-build/steps.js';
import type { Capabilities } from '../../lib/capabilities.js';
import { socFixturesDir } from '../helpers/paths.js';

// The CMake options `mnn-edge engine build` picks, for every captured board, with and without the vendor
// toolkits on the machine. A new fixture without a row here fails the first test.

const board = (dir: string): Capabilities => detect({ root: join(socFixturesDir, dir) });
const options = (caps: Capabilities, host: BuildHost = {}) =>
  Object.fromEntries(engineBuildSpec(caps, host).cmake) as Record<string, string>;

/** Per board: backends with no toolkits installed, the options that must be set, and those that must not. */
const EXPECTED: Record<string, { backends: string[]; set: Record<string, string>; unset: string[] }> = {
  'nvidia-jetson-orin-nano-super': {
    backends: [],
    set: { MNN_ARM82: 'ON' },
    unset: ['MNN_CUDA', 'MNN_OPENCL'],
  },
  'qcom-qcs6490-rb3gen2': {
    backends: ['opencl'],
    set: { MNN_ARM82: 'ON', MNN_OPENCL: 'ON' },
    unset: ['MNN_QNN', 'MNN_HEXAGON', 'MNN_VULKAN'],
  },
  'qcom-qcs9075-iq9075-evk': {
    backends: ['opencl'],
    set: { MNN_ARM82: 'ON', MNN_OPENCL: 'ON' },
    unset: ['MNN_QNN', 'MNN_HEXAGON'],
  },
  'rockchip-rk3588-rock5b': {
    backends: ['opencl'],
    set: { MNN_ARM82: 'ON', MNN_OPENCL: 'ON' },
    unset: ['MNN_CUDA', 'MNN_VULKAN'],
  },
  'rpi5-bcm2712': { backends: ['vulkan'], set: { MNN_ARM82: 'ON', MNN_VULKAN: 'ON' }, unset: ['MNN_OPENCL'] },
  'spacemit-k1-bpi-f3': {
    backends: [],
    set: { MNN_USE_RVV: 'ON', MNN_RVV_MARCH: 'rv64gcv' },
    unset: ['MNN_RVV_SPACEMIT_IME2', 'MNN_OPENCL', 'MNN_ARM82'],
  },
  'spacemit-k3-com260': {
    backends: [],
    set: { MNN_USE_RVV: 'ON', MNN_RVV_SPACEMIT_IME2: 'ON' },
    unset: ['MNN_OPENCL', 'MNN_ARM82'],
  },
  'starfive-jh7110-visionfive2': {
    backends: [],
    set: { MNN_USE_RVV: 'OFF' },
    unset: ['MNN_RVV_SPACEMIT_IME2'],
  },
  'x86_64-devhost-zen5': { backends: [], set: { MNN_AVX512: 'ON' }, unset: ['MNN_ARM82', 'MNN_USE_RVV'] },
};

test('every board fixture has a row, and its spec enables exactly the backends its hardware supports', (t) => {
  const fixtures = readdirSync(socFixturesDir).sort();
  t.deepEqual(fixtures, Object.keys(EXPECTED).sort());
  for (const dir of fixtures) {
    const expected = EXPECTED[dir]!;
    const spec = engineBuildSpec(board(dir), {});
    t.deepEqual(spec.backends, expected.backends, dir);
    const o = Object.fromEntries(spec.cmake);
    for (const [k, v] of Object.entries(expected.set)) t.is(o[k], v, `${dir}: ${k}`);
    for (const k of expected.unset) t.is(o[k], undefined, `${dir}: ${k} must not be set`);
    // The engine addon needs these on every board.
    for (const k of [
      'MNN_BUILD_LLM',
      'MNN_BUILD_LLM_OMNI',
      'MNN_BUILD_AUDIO',
      'MNN_IMGCODECS',
      'MNN_LOW_MEMORY',
    ])
      t.is(o[k], 'ON', `${dir}: ${k}`);
    t.is(o['MNN_SEP_BUILD'], 'OFF', dir);
    t.true(spec.reasons.length > 0, dir);
  }
});

test('Jetson: CUDA with the board compute capability once a toolkit is found, and a warning before', (t) => {
  const caps = board('nvidia-jetson-orin-nano-super');
  const without = engineBuildSpec(caps, { searched: { qnn: [], hexagon: [], cuda: ['/usr/local/cuda'] } });
  t.regex(without.warnings.join('\n'), /no CUDA toolkit \(bin\/nvcc\) in \/usr\/local\/cuda/);
  const o = options(caps, { cudaRoot: '/usr/local/cuda' });
  t.is(o['MNN_CUDA'], 'ON');
  t.is(o['CUDA_ARCHS'], '8.7');
  t.is(o['CUDA_TOOLKIT_ROOT_DIR'], '/usr/local/cuda');
});

test('Qualcomm: QNN and (where the NPU runs it) Hexagon with the SDK paths found', (t) => {
  const host = { qnnSdkRoot: '/opt/qcom/aistack/qairt/2.31', hexagonSdkRoot: '/opt/qcom/Hexagon_SDK/6.0' };
  const big = engineBuildSpec(board('qcom-qcs9075-iq9075-evk'), host);
  t.deepEqual(big.backends, ['opencl', 'qnn', 'hexagon']);
  const o = Object.fromEntries(big.cmake);
  t.is(o['QNN_SDK_ROOT'], host.qnnSdkRoot);
  t.is(o['HEXAGON_SDK_ROOT'], host.hexagonSdkRoot);
  // QCS6490's v68 runs QNN but not MNN's Hexagon backend.
  t.deepEqual(engineBuildSpec(board('qcom-qcs6490-rb3gen2'), host).backends, ['opencl', 'qnn']);
  const none = engineBuildSpec(board('qcom-qcs6490-rb3gen2'), {
    searched: { qnn: ['$QNN_SDK_ROOT=/x'], hexagon: [], cuda: [] },
  });
  t.regex(
    none.warnings.join('\n'),
    /QNN: Hexagon v68 NPU found but no QAIRT\/QNN SDK \(include\/QNN\) in \$QNN_SDK_ROOT=\/x/,
  );
});

test('GPU loaders: a warning names the unversioned library MNN dlopens when only the soname is installed', (t) => {
  const spec = engineBuildSpec(board('rpi5-bcm2712'), {});
  t.deepEqual(
    spec.warnings.filter((w) => w.startsWith('Vulkan')),
    [
      'Vulkan: MNN loads libvulkan.so (unversioned) at run time and only libvulkan.so.1 is installed; install libvulkan-dev or link libvulkan.so to the loader, or the vulkan backend stays unavailable',
    ],
  );
  t.regex(
    engineBuildSpec(board('rockchip-rk3588-rock5b'), {}).warnings.join('\n'),
    /MNN loads libOpenCL.so \(unversioned\) at run time and no loader was found/,
  );
});

test('toolkits are found through the vendor variables and default directories, newest version first', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'engine-sdk-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const v of ['2.9.0', '2.31.0'])
    mkdirSync(join(root, 'opt/qcom/aistack/qairt', v, 'include/QNN'), { recursive: true });
  mkdirSync(join(root, 'usr/local/cuda/bin'), { recursive: true });
  writeFileSync(join(root, 'usr/local/cuda/bin/nvcc'), '');
  const host = findBuildHost({}, root);
  t.is(host.qnnSdkRoot, join(root, 'opt/qcom/aistack/qairt/2.31.0'));
  t.is(host.cudaRoot, join(root, 'usr/local/cuda'));
  t.is(host.hexagonSdkRoot, undefined);
  const hexagon = join(root, 'sdk');
  mkdirSync(join(hexagon, 'build/cmake'), { recursive: true });
  writeFileSync(join(hexagon, 'build/cmake/hexagon_fun.cmake'), '');
  t.is(findBuildHost({ HEXAGON_SDK_ROOT: hexagon }, root).hexagonSdkRoot, hexagon);
});

test('steps: fetch the pinned commit only when no tree is given, then configure, build, install, addon', (t) => {
  const spec = engineBuildSpec(board('rockchip-rk3588-rock5b'), {});
  const common = { ref: 'abc1234', workDir: '/w', prefix: '/opt/mnn', jobs: 4, nodePath: '/usr/bin/node' };
  const cloned = buildSteps(spec, { ...common, cloneExists: false, packageRoot: '/app' }).map(formatStep);
  t.deepEqual(cloned.slice(0, 4), [
    'git init --quiet /w/MNN',
    'git -C /w/MNN remote add origin https://github.com/alibaba/MNN.git',
    'git -C /w/MNN fetch --depth 1 origin abc1234',
    'git -C /w/MNN checkout --quiet --detach FETCH_HEAD',
  ]);
  t.is(
    cloned[4],
    formatStep({
      title: '',
      command: ['cmake', ...cmakeConfigureArgs(spec, '/w/MNN', '/w/build', '/opt/mnn')],
    }),
  );
  // Installed binaries find the prefix's libraries, never the build directory's (the shell line quotes $ORIGIN).
  t.true(cloned[4]!.includes(`'-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib'`), cloned[4]);
  t.is(
    cloned.at(-1),
    'cd /app && MNN_ROOT=/opt/mnn /usr/bin/node /app/engine/scripts/build-engine.mjs --jobs 4',
  );
  const given = buildSteps(spec, { ...common, src: '/src/MNN', cloneExists: false }).map(formatStep);
  t.false(
    given.some((s) => s.startsWith('git')),
    'a given tree is used as it is',
  );
  t.true(given[0]!.startsWith('cmake -S /src/MNN -B /w/build -DCMAKE_INSTALL_PREFIX=/opt/mnn'));
  t.false(
    given.some((s) => s.includes('build-engine.mjs')),
    'no addon step without engine sources',
  );
});

test('--with converter: MNNConvert and its library are built and installed into the prefix, and run from there', (t) => {
  const rock5b = board('rockchip-rk3588-rock5b');
  const without = engineBuildSpec(rock5b, {});
  t.deepEqual(without.tools, []);
  t.true(without.cmake.some(([k, v]) => k === 'MNN_BUILD_CONVERTER' && v === 'OFF'));
  const spec = engineBuildSpec(rock5b, {}, { tools: ['converter'] });
  t.deepEqual(spec.tools, ['converter']);
  t.true(spec.cmake.some(([k, v]) => k === 'MNN_BUILD_CONVERTER' && v === 'ON'));
  t.deepEqual(spec.backends, without.backends, 'a tool is not a backend');
  t.true(spec.reasons.some((r) => r.startsWith('converter: MNNConvert')));
  const common = { ref: 'abc1234', workDir: '/w', prefix: '/opt/mnn', jobs: 4, nodePath: '/usr/bin/node' };
  const steps = buildSteps(spec, { ...common, src: '/src/MNN', cloneExists: false }).map(formatStep);
  const install = steps.indexOf('cmake --install /w/build');
  t.deepEqual(steps.slice(install + 3, install + 6), [
    'cmake -E copy /w/build/MNNConvert /opt/mnn/bin',
    'cmake -E copy /w/build/tools/converter/libMNNConvertDeps.so /opt/mnn/lib',
    "LD_LIBRARY_PATH='' /opt/mnn/bin/MNNConvert --version",
  ]);
  // A cross-built converter is for the board: it is installed, not run here.
  const cross = engineBuildSpec(rock5b, {}, { tools: ['converter'] }, 'aarch64-linux-gnu');
  const crossSteps = buildSteps(cross, { ...common, src: '/src/MNN', cloneExists: false }).map(formatStep);
  t.true(crossSteps.some((s) => s.endsWith('libMNNConvertDeps.so /opt/mnn/lib')));
  t.false(crossSteps.some((s) => s.includes('MNNConvert --version')));
});

test('steps: a CUDA build installs the kernels library libMNN.so links; a trial addon build goes elsewhere', (t) => {
  const host = { cudaRoot: '/usr/local/cuda' };
  const spec = engineBuildSpec(board('nvidia-jetson-orin-nano-super'), host);
  t.true(spec.backends.includes('cuda'), spec.reasons.join('\n'));
  const common = { ref: 'abc1234', workDir: '/w', prefix: '/opt/mnn', jobs: 4, nodePath: '/usr/bin/node' };
  const steps = buildSteps(spec, {
    ...common,
    src: '/src/MNN',
    cloneExists: false,
    packageRoot: '/app',
    addonBuildDir: '/tmp/addon',
  }).map(formatStep);
  t.true(steps.includes('cmake -E copy /w/build/source/backend/cuda/libMNN_Cuda_Main.so /opt/mnn/lib'));
  t.is(
    steps.at(-1),
    'cd /app && MNN_ROOT=/opt/mnn /usr/bin/node /app/engine/scripts/build-engine.mjs --jobs 4 --out /tmp/addon',
  );
  const cpuOnly = buildSteps(engineBuildSpec(board('rockchip-rk3588-rock5b'), {}), {
    ...common,
    cloneExists: true,
  }).map(formatStep);
  t.false(
    cpuOnly.some((s) => s.includes('libMNN_Cuda_Main.so')),
    'no CUDA library without the CUDA backend',
  );
});

test('progress lines of make and ninja', (t) => {
  t.is(progressOf('[ 42%] Building CXX object x.o'), 42);
  t.is(progressOf('[100%] Linking CXX shared library libMNN.so'), 100);
  t.is(progressOf('[12/48] Building CXX object'), 25);
  t.is(progressOf('-- Configuring done'), undefined);
});

test('--with and --without: the user overrides detection, a toolkit backend still needs its toolkit', (t) => {
  const host = board('x86_64-devhost-zen5');
  const forced = engineBuildSpec(host, {}, { with: ['vulkan', 'opencl'] });
  t.deepEqual(forced.backends, ['vulkan', 'opencl']);
  const o = Object.fromEntries(forced.cmake);
  t.is(o['MNN_VULKAN'], 'ON');
  t.is(o['MNN_OPENCL'], 'ON');
  t.true(
    forced.reasons.includes('vulkan: asked for (--with); detection did not find it usable on this board'),
  );
  const dropped = engineBuildSpec(board('rockchip-rk3588-rock5b'), {}, { without: ['opencl'] });
  t.deepEqual(dropped.backends, []);
  t.is(Object.fromEntries(dropped.cmake)['MNN_OPENCL'], undefined);
  t.throws(() => engineBuildSpec(host, {}, { with: ['cuda'] }), {
    message: '--with cuda needs a CUDA toolkit (CUDA_HOME), which was not found',
  });
  t.is(
    Object.fromEntries(engineBuildSpec(host, { cudaRoot: '/usr/local/cuda' }, { with: ['cuda'] }).cmake)[
      'CUDA_TOOLKIT_ROOT_DIR'
    ],
    '/usr/local/cuda',
  );
});

test('cross-build: for every arm64 and riscv64 board the spec is the native one, only the toolchain is added', (t) => {
  const targets: Record<string, CrossTarget> = { aarch64: 'aarch64-linux-gnu', riscv64: 'riscv64-linux-gnu' };
  let boards = 0;
  for (const dir of readdirSync(socFixturesDir).sort()) {
    const caps = board(dir);
    const arch = caps.cpu.architecture.value ?? 'unknown';
    const target = targets[arch];
    if (target === undefined) {
      t.throws(() => engineBuildSpec(caps, {}, {}, 'aarch64-linux-gnu'), {
        message: new RegExp(`builds for aarch64, but the board's capabilities .* say ${arch}`),
      });
      continue;
    }
    boards++;
    const host: BuildHost = { qnnSdkRoot: '/opt/qairt', cudaRoot: '/usr/local/cuda' };
    const native = engineBuildSpec(caps, host);
    const cross = engineBuildSpec(caps, host, {}, target);
    t.deepEqual(cross.cmake, native.cmake, dir);
    t.deepEqual(cross.backends, native.backends, dir);
    t.deepEqual(cross.warnings, native.warnings, dir);
    t.deepEqual(cross.reasons.slice(0, -1), native.reasons, dir);
    t.is(native.toolchain, null);
    t.is(cross.toolchain?.target, target);
    t.regex(cross.reasons.at(-1)!, new RegExp(`^Toolchain: cross-built for ${target} with `));
    // The configure line differs in the toolchain file alone.
    const nativeArgs = cmakeConfigureArgs(native, '/src', '/b', '/p', '/w/tc.cmake');
    const crossArgs = cmakeConfigureArgs(cross, '/src', '/b', '/p', '/w/tc.cmake');
    t.deepEqual(
      crossArgs.filter((a) => a !== '-DCMAKE_TOOLCHAIN_FILE=/w/tc.cmake'),
      nativeArgs,
      dir,
    );
    t.true(crossArgs.includes('-DCMAKE_TOOLCHAIN_FILE=/w/tc.cmake'), dir);
    const o = Object.fromEntries(cross.cmake);
    if (arch === 'riscv64') {
      // RVV exactly when the ISA string has the single-letter v.
      const isa = caps.cpu.model.value ?? '';
      const hasV = /^rv64[a-z]*v/.test(isa.split('_')[0]!);
      t.is(o['MNN_USE_RVV'], hasV ? 'ON' : 'OFF', `${dir}: ${isa}`);
      t.is(cross.toolchain?.cxx, 'clang++-19');
    } else {
      t.is(o['MNN_KLEIDIAI'], 'OFF', dir);
      t.true(
        cross.reasons.some((r) => r.startsWith("KleidiAI: off (MNN's CMake would download it")),
        dir,
      );
      t.is(cross.toolchain?.cxx, 'aarch64-linux-gnu-g++');
    }
  }
  t.is(boards, 8, 'five arm64 and three riscv64 fixtures');
});

test('cross-build: KleidiAI from a local tree is built in and printed; the toolchain file names the compilers', (t) => {
  const caps = board('rpi5-bcm2712');
  const spec = engineBuildSpec(caps, { kleidiaiSrc: '/src/kleidiai' }, {}, 'aarch64-linux-gnu');
  const o = Object.fromEntries(spec.cmake);
  t.is(o['MNN_KLEIDIAI'], 'ON');
  t.is(o['KLEIDIAI_SRC_DIR'], '/src/kleidiai');
  t.true(
    spec.reasons.includes('KleidiAI: on, from the local source tree /src/kleidiai (nothing is downloaded)'),
  );
  t.is(options(board('x86_64-devhost-zen5'))['MNN_KLEIDIAI'], undefined, 'x86 builds have no Arm kernels');
  const arm = toolchainFileText(spec.toolchain!);
  t.regex(arm, /^set\(CMAKE_SYSTEM_PROCESSOR aarch64\)$/m);
  t.regex(arm, /^set\(CMAKE_CXX_COMPILER aarch64-linux-gnu-g\+\+\)$/m);
  const rv = toolchainFileText(
    engineBuildSpec(board('spacemit-k1-bpi-f3'), {}, {}, 'riscv64-linux-gnu').toolchain!,
  );
  t.regex(rv, /^set\(CMAKE_CXX_COMPILER clang\+\+-19\)$/m);
  t.regex(rv, /^set\(CMAKE_CXX_COMPILER_TARGET riscv64-linux-gnu\)$/m);
  t.regex(rv, /^set\(CMAKE_FIND_ROOT_PATH \/usr\/riscv64-linux-gnu\)$/m);
});

test('cross-build steps: the arm64 addon and better-sqlite3 are built for the target; riscv64 gets no addon', (t) => {
  const common = { ref: 'x', workDir: '/w', prefix: '/opt/mnn-aarch64', jobs: 2, nodePath: '/usr/bin/node' };
  const arm = engineBuildSpec(board('rockchip-rk3588-rock5b'), {}, {}, 'aarch64-linux-gnu');
  const steps = buildSteps(arm, {
    ...common,
    src: '/src',
    cloneExists: false,
    packageRoot: '/app',
    toolchainFile: '/w/tc.cmake',
    targetNodeDir: '/cache/node-linux-arm64',
  }).map(formatStep);
  t.true(steps[0]!.includes(' -DCMAKE_TOOLCHAIN_FILE=/w/tc.cmake '));
  t.deepEqual(steps.slice(-2), [
    'cd /app && MNN_ROOT=/opt/mnn-aarch64 /usr/bin/node /app/engine/scripts/build-engine.mjs --jobs 2 --out /app/engine/build-aarch64-linux-gnu --toolchain /w/tc.cmake',
    'cd /app && /usr/bin/node /app/engine/scripts/build-better-sqlite3.mjs --target aarch64-linux-gnu --nodedir /cache/node-linux-arm64 --out /app/engine/build-aarch64-linux-gnu/better-sqlite3',
  ]);
  const rv = engineBuildSpec(board('spacemit-k3-com260'), {}, {}, 'riscv64-linux-gnu');
  const rvSteps = buildSteps(rv, { ...common, src: '/src', cloneExists: false, packageRoot: '/app' });
  t.false(rvSteps.some((s) => s.title.includes('addon') || s.title.includes('sqlite')));
});
