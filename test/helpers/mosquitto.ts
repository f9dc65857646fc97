import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A real mosquitto for integration tests: its own config in a temp dir, a free loopback port, persistence on
// (so sessions and queued messages survive a stop/start, as the outage test needs), and stop/start that keep
// the same port.

export const MOSQUITTO_BIN = process.env['MOSQUITTO_BIN'] ?? '/usr/sbin/mosquitto';

export function mosquittoAvailable(): boolean {
  return existsSync(MOSQUITTO_BIN);
}

export interface MosquittoOptions {
  persistence?: boolean;
  /** Extra lines appended to the generated config (acl_file, password_file…). */
  extraConfig?: string[];
  /** Pick the port and write the config, but do not start yet (an agent that boots before its broker). */
  startLater?: boolean;
}

export interface Mosquitto {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  readonly running: boolean;
  /** SIGTERM (mosquitto saves its persistence file on the way out) and wait for exit. */
  stop(): Promise<void>;
  /** Start again on the same port with the same persistence. */
  start(): Promise<void>;
  /** SIGKILL: no persistence saved beyond the last autosave, no goodbye to clients. */
  kill(): Promise<void>;
  /** Stop and delete the temp dir. */
  close(): Promise<void>;
  log(): string;
}

function isAlive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(proc)) throw new Error(`mosquitto exited (${proc.exitCode ?? proc.signalCode})`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`mosquitto did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

export async function startMosquitto(options: MosquittoOptions = {}): Promise<Mosquitto> {
  if (!mosquittoAvailable())
    throw new Error(
      `mosquitto not found at ${MOSQUITTO_BIN}: run scripts/install-test-deps.sh (apt: mosquitto)`,
    );
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-mosquitto-'));
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      `persistence ${options.persistence ? 'true' : 'false'}`,
      `persistence_location ${dir}/`,
      'autosave_interval 1',
      // Room for an outage's worth of queued QoS 1 messages per persistent session.
      'max_queued_messages 100000',
      'max_inflight_messages 100',
      // As docs/FLEET.md recommends: without it a second QoS 1 acknowledgement in flight waits ~40 ms for the
      // client's delayed TCP ACK (Nagle's algorithm on mosquitto's socket).
      'set_tcp_nodelay true',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      // Started as root (CI containers), mosquitto would switch to the `mosquitto` user, which cannot write
      // the persistence file into our private temp dir.
      ...(process.getuid?.() === 0 ? ['user root'] : []),
      ...(options.extraConfig ?? []),
      '',
    ].join('\n'),
  );
  let proc: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    if (proc && isAlive(proc)) return;
    const p = spawn(MOSQUITTO_BIN, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    p.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    proc = p;
    await waitForPort(port, 5_000, p);
  };
  const signal = async (sig: NodeJS.Signals) => {
    const p = proc;
    if (!p || !isAlive(p)) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill(sig);
    });
  };
  const stop = () => signal('SIGTERM');
  if (!options.startLater) await start();
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    dir,
    get running() {
      return proc !== undefined && isAlive(proc);
    },
    stop,
    start,
    kill: () => signal('SIGKILL'),
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => output,
  };
}
