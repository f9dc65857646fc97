import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** A started `mnn-edge run` and the HTTP calls a test makes to it with the pairing token. */
export interface AgentDaemon<B = unknown> {
  url: string;
  token: string;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: B }>;
  /** What the daemon has written so far (stdout and stderr): for what it logs rather than answers. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `mnn-edge run` on `dataDir` and waits (a generous budget, for a busy machine) until its last module,
 * the settings, has started: then every HTTP route answers. The output is in the error when it does not start.
 */
export async function startAgentDaemon<B = unknown>(
  dataDir: string,
  config: Record<string, unknown>,
): Promise<AgentDaemon<B>> {
  const child = spawnAgentRun(dataDir, { config });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  // The settings module starts after the dashboard: then /api/config answers.
  const ready = () => out.includes('"msg":"module started","module":"settings"');
  for (let i = 0; i < 2400 && !ready(); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = /"msg":"(?:serving|listening)".*?"port":(\d+)/.exec(out)?.[1];
  if (!port || !ready()) {
    child.kill('SIGKILL');
    throw new Error(`the daemon did not start:\n${out}`);
  }
  const url = `http://127.0.0.1:${port}`;
  const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
  return {
    url,
    token,
    async call(method, path, body) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as B };
    },
    output: () => out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
