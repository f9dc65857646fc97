#!/usr/bin/env node
// Builds the MNN engine addon (engine/build/Release/mnn_edge_engine.node) with cmake-js against an installed
// MNN. `--optional` (npm's postinstall) never fails the install: without MNN or a toolchain it prints why it
// skipped, and the engine loader explains the same thing to whoever asks for the engine later.
//
// Usage: node engine/scripts/build-engine.mjs [--optional] [--debug] [--jobs N] [--out DIR] [--toolchain FILE]
// --out builds elsewhere than engine/build (the loader then needs MNN_EDGE_ENGINE_ADDON=DIR/Release/...node),
// so a trial build against another MNN prefix leaves the checkout's working addon alone.
// --toolchain FILE cross-builds (the CMake toolchain file `mnn-edge engine build --target` writes); the addon is
// Node-API, so the headers are the same for every architecture and nothing is downloaded.
// MNN is looked for in $MNN_ROOT, /opt/mnn, /usr/local, /usr (include/MNN, include/llm/llm.hpp, lib/libMNN.so).
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const engineDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = resolve(engineDir, '..');
const args = process.argv.slice(2);
const outArg = args.indexOf('--out');
const buildDir = outArg >= 0 && args[outArg + 1] ? resolve(args[outArg + 1]) : join(engineDir, 'build');
const optional = args.includes('--optional');
const debug = args.includes('--debug');
const jobsArg = args.indexOf('--jobs');
const jobs = jobsArg >= 0 ? Number(args[jobsArg + 1]) : Math.min(2, cpus().length);
const toolchainArg = args.indexOf('--toolchain');
const toolchain = toolchainArg >= 0 && args[toolchainArg + 1] ? resolve(args[toolchainArg + 1]) : undefined;

const ELF_MACHINES = { 62: 'x86_64', 183: 'aarch64', 243: 'riscv64' };
const NODE_MACHINES = { x64: 'x86_64', arm64: 'aarch64', riscv64: 'riscv64' };

/** The CPU an ELF file is for (e_machine of its header), or undefined when it is not one. */
function elfMachineOf(path) {
  const header = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    if (readSync(fd, header, 0, 20, 0) < 20 || header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  } finally {
    closeSync(fd);
  }
  const m = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
  return ELF_MACHINES[m] ?? `machine ${m}`;
}

/** The architecture the addon is built for: the toolchain file's CMAKE_SYSTEM_PROCESSOR, else this Node's. */
function targetMachine() {
  if (toolchain === undefined) return NODE_MACHINES[process.arch] ?? process.arch;
  const m = /set\(CMAKE_SYSTEM_PROCESSOR\s+(\S+)\)/.exec(readFileSync(toolchain, 'utf8'));
  return m ? m[1] : undefined;
}

const HELP =
  'Set MNN_ROOT to an MNN install prefix (include/MNN, lib/libMNN.so, the llm library) and run npm run build:engine.';

/** The first prefix holding MNN's headers, the LLM engine header and the core library, or why none does. */
export function findMnn(env = process.env) {
  const prefixes = [env.MNN_ROOT, '/opt/mnn', '/usr/local', '/usr'].filter((p) => typeof p === 'string' && p);
  const tried = [];
  for (const prefix of prefixes) {
    const header = join(prefix, 'include', 'MNN', 'Interpreter.hpp');
    const llmHeader = join(prefix, 'include', 'llm', 'llm.hpp');
    const lib = ['lib', 'lib64'].map((d) => join(prefix, d, 'libMNN.so')).find((p) => existsSync(p));
    if (!existsSync(header) || !lib) {
      tried.push(`${prefix} (no include/MNN or lib/libMNN.so)`);
      continue;
    }
    if (!existsSync(llmHeader)) {
      tried.push(`${prefix} (MNN without the LLM engine: no include/llm/llm.hpp)`);
      continue;
    }
    return { found: true, prefix, lib };
  }
  return { found: false, reason: `no MNN install found; looked in ${tried.join(', ')}` };
}

function skip(reason) {
  const line = `MNN engine not available: ${reason}. ${HELP}`;
  if (optional) {
    console.log(`mnn-edge engine: skipping the native build. ${line}`);
    process.exit(0);
  }
  console.error(line);
  process.exit(1);
}

async function main() {
  if (!existsSync(join(engineDir, 'CMakeLists.txt')) || !existsSync(join(engineDir, 'native', 'addon.cc'))) {
    skip('the engine sources (engine/CMakeLists.txt, engine/native/) are missing from this checkout');
  }
  if (toolchain !== undefined && !existsSync(toolchain))
    skip(`the toolchain file ${toolchain} does not exist`);
  const mnn = findMnn();
  if (!mnn.found) skip(mnn.reason);
  // Linking an x86 addon against an arm64 libMNN.so fails deep in the linker; say which two CPUs differ.
  const want = targetMachine();
  const have = elfMachineOf(mnn.lib);
  if (want !== undefined && have !== undefined && want !== have) {
    skip(
      `${mnn.lib} is built for ${have} and this addon build is for ${want}${toolchain ? ` (${toolchain})` : ' (this Node)'}; point MNN_ROOT at a ${want} prefix${toolchain ? '' : ' or pass --toolchain'}`,
    );
  }

  // Node-API mode: headers come from the node-api-headers package, never downloaded. cmake-js decides that
  // from `binary.napi_versions` in the package.json of the directory it builds, so it is read from the root.
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
  const napiVersions = pkg?.binary?.napi_versions;
  if (!Array.isArray(napiVersions) || napiVersions.length === 0) {
    skip('package.json has no binary.napi_versions (needed so that cmake-js uses Node-API headers from npm)');
  }
  const napiVersion = Math.max(...napiVersions);

  let cmakeJs;
  try {
    cmakeJs = createRequire(import.meta.url)('cmake-js');
  } catch (err) {
    skip(`cmake-js is not installed (${err.message.split('\n')[0]})`);
  }
  const buildSystem = new cmakeJs.BuildSystem({
    directory: engineDir,
    out: buildDir,
    config: debug ? 'Debug' : 'Release',
    parallel: jobs,
    cMakeOptions: {
      NAPI_VERSION: String(napiVersion),
      MNN_ROOT: mnn.prefix,
      ...(toolchain !== undefined ? { CMAKE_TOOLCHAIN_FILE: toolchain } : {}),
    },
    log: true,
  });
  buildSystem.options.isNodeApi = true;
  console.log(
    `mnn-edge engine: building for ${want} against MNN at ${mnn.prefix} (Node-API ${napiVersion}, -j${jobs})`,
  );
  try {
    // cmake-js reconfigures only when needed, so a rebuild after editing one .cc file stays incremental.
    await buildSystem.build();
  } catch (err) {
    const reason = `the addon build failed (${String(err?.message ?? err).split('\n')[0]})`;
    if (optional) skip(reason);
    console.error(`mnn-edge engine: ${reason}`);
    process.exit(1);
  }
  console.log(
    `mnn-edge engine: built ${join(buildDir, debug ? 'Debug' : 'Release', 'mnn_edge_engine.node')}`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
