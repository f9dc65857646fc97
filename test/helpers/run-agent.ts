import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { repoRoot } from './paths.js';

/**
 * `mnn-edge run` from sources as its own process, on loopback with OS-chosen ports (HTTP and the embedded
 * broker, whose default 1883 every test would share). `config` is merged into that minimal file.
 */
let starts = 0;

export function spawnAgentRun(
  dataDir: string,
  options: { config?: Record<string, unknown>; env?: NodeJS.ProcessEnv } = {},
): ChildProcessByStdio<null, Readable, Readable> {
  mkdirSync(dataDir, { recursive: true });
  // One file per start: a restart on the same data dir must not lose its file to the previous child's 'close'.
  const configPath = join(dataDir, '..', `agent-${basename(dataDir)}-${++starts}.json`);
  writeFileSync(configPath, JSON.stringify({ mqtt: { embeddedBroker: { port: 0 } }, ...options.config }));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'agent/cli/mnn-edge.ts',
      'run',
      '--config',
      configPath,
      '--port',
      '0',
      '--bind',
      '127.0.0.1',
      '--data-dir',
      dataDir,
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, MNN_EDGE_DATA_DIR: '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // The file sits beside the data dir, outside the folder a test removes; it lives as long as the agent reads it.
  child.once('close', () => rmSync(configPath, { force: true }));
  return child;
}
