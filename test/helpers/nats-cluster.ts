import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAsync } from 'mqtt';

// A real 3-node NATS cluster on loopback for the fleet tests and bench/fleet: JetStream (which NATS's MQTT
// support stores sessions, retained messages and QoS 1 deliveries in) and an MQTT 3.1.1 listener on every
// node, full-mesh routes, free ports picked here. Debian's nats-server (2.9) is what scripts/install-test-deps.sh
// installs; tests skip with one line when it is absent.

export const NATS_BIN = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';

export function natsAvailable(): boolean {
  return existsSync(NATS_BIN);
}

/** The one line a test prints when it cannot run. */
export function natsSkipReason(): string | undefined {
  return natsAvailable() ? undefined : `nats-server not found at ${NATS_BIN} (scripts/install-test-deps.sh)`;
}

export interface NatsNode {
  readonly name: string;
  readonly mqttUrl: string;
  readonly running: boolean;
  /** SIGKILL: the node is gone without a goodbye, as a crashed or unplugged machine is. */
  kill(): Promise<void>;
  /** Starts the node again with its store; resolves once its MQTT listener answers. */
  start(): Promise<void>;
  log(): string;
}

export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  readonly mqttUrls: string[];
  close(): Promise<void>;
}

export interface NatsClusterOptions {
  size?: number;
  /**
   * `mqtt.stream_replicas`: copies of the MQTT streams (sessions, retained messages, QoS 1 deliveries). Left
   * out, nats-server 2.9 creates them with one replica, on whichever node created them first.
   */
  streamReplicas?: number;
  /**
   * `mqtt.consumer_replicas`: copies of each QoS 1 subscription's JetStream consumer. Left out, as many as the
   * streams: with 3, every board's every filter is a 3-node raft group.
   */
  consumerReplicas?: number;
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

function alive(p: ChildProcess | undefined): boolean {
  return p !== undefined && p.exitCode === null && p.signalCode === null;
}

const SUBACK_WAIT_MS = 5_000;
const STOP_GRACE_MS = 5_000;

/** `p`'s value, or undefined once `ms` have passed without it. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Until a QoS 1 subscription is granted: the node's JetStream has a meta leader and the MQTT streams exist. */
async function waitForMqtt(
  url: string,
  proc: () => ChildProcess | undefined,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no attempt';
  while (Date.now() < deadline) {
    if (!alive(proc())) throw new Error(`nats-server for ${url} exited`);
    try {
      const c = await connectAsync(url, {
        protocolVersion: 4,
        reconnectPeriod: 0,
        connectTimeout: 2_000,
        clientId: `probe-${Math.random().toString(36).slice(2, 10)}`,
      });
      try {
        // Bounded: a node whose JetStream has no leader yet can leave a SUBSCRIBE unanswered, and mqtt.js waits
        // for its SUBACK without end (a suspect, not proven, for a run beside the CPU hog whose cluster start
        // never returned); a fresh connection's SUBSCRIBE is answered once the leader is there.
        const subscribed = c.subscribeAsync('mnn-edge/probe', { qos: 1 });
        subscribed.catch(() => {}); // once given up on, the forced end below rejects it: nobody listens then
        const granted = await within(subscribed, SUBACK_WAIT_MS);
        if (granted === undefined) last = `SUBSCRIBE unanswered for ${SUBACK_WAIT_MS} ms`;
        else if (granted.every((g) => g.qos === 1)) return;
        else last = `subscription refused (${JSON.stringify(granted)})`;
      } finally {
        await c.endAsync(true);
      }
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`NATS MQTT at ${url} not ready within ${timeoutMs} ms: ${last}`);
}

/**
 * One cluster at a time on this machine. Two 3-node JetStream clusters beside the test suite's CPU hog starve each
 * other's leader elections (a node then refuses SUBSCRIBE for minutes), so test files that ava runs in parallel
 * take turns. A lock left by a process that died is taken over.
 */
const CLUSTER_LOCK = join(tmpdir(), 'mnn-edge-nats-cluster.lock');

function alivePid(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function takeClusterLock(): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(CLUSTER_LOCK);
      writeFileSync(join(CLUSTER_LOCK, 'pid'), String(process.pid));
      return () => rmSync(CLUSTER_LOCK, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = 0;
    try {
      owner = Number(readFileSync(join(CLUSTER_LOCK, 'pid'), 'utf8'));
    } catch {
      // Not written yet by its new owner: wait like for a live one.
    }
    if (owner > 0 && !alivePid(owner)) rmSync(CLUSTER_LOCK, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 500));
  }
}

export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  if (!natsAvailable()) throw new Error(natsSkipReason());
  const unlock = await takeClusterLock();
  try {
    return await launchCluster(options, unlock);
  } catch (err) {
    unlock();
    throw err;
  }
}

async function launchCluster(options: NatsClusterOptions, unlock: () => void): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-nats-'));
  const ports = await Promise.all(
    Array.from({ length: size }, async () => ({
      client: await freePort(),
      cluster: await freePort(),
      mqtt: await freePort(),
    })),
  );
  const nodes: NatsNode[] = ports.map((p, i) => {
    const name = `n${i + 1}`;
    const store = join(dir, name);
    mkdirSync(store, { recursive: true });
    const conf = join(dir, `${name}.conf`);
    const routes = ports
      .filter((_, j) => j !== i)
      .map((o) => `nats-route://127.0.0.1:${o.cluster}`)
      .join(', ');
    writeFileSync(
      conf,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${p.client}`,
        `jetstream { store_dir: "${store}" }`,
        `cluster { name: mnn-edge-test, listen: 127.0.0.1:${p.cluster}, routes: [${routes}] }`,
        `mqtt { listen: 127.0.0.1:${p.mqtt}${options.streamReplicas ? `, stream_replicas: ${options.streamReplicas}` : ''}${options.consumerReplicas ? `, consumer_replicas: ${options.consumerReplicas}` : ''} }`,
        '',
      ].join('\n'),
    );
    let proc: ChildProcess | undefined;
    let output = '';
    const mqttUrl = `mqtt://127.0.0.1:${p.mqtt}`;
    const launch = () => {
      if (alive(proc)) return;
      const child = spawn(NATS_BIN, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr?.on('data', (d: Buffer) => {
        // Bounded: a long bench must not grow the test's memory with the server's log.
        output = (output + d.toString()).slice(-200_000);
      });
      proc = child;
    };
    return {
      name,
      mqttUrl,
      get running() {
        return alive(proc);
      },
      async kill() {
        const c = proc;
        if (!c || !alive(c)) return;
        await new Promise<void>((resolve) => {
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        });
      },
      async start() {
        launch();
        await waitForMqtt(mqttUrl, () => proc, 60_000);
      },
      log: () => output,
      // Internal: lets the cluster start every node before waiting for any (they need each other for quorum).
      launch,
      stop: async () => {
        const c = proc;
        if (!c || !alive(c)) return;
        await new Promise<void>((resolve) => {
          // A JetStream node can take its time to shut down on a starved machine; the cluster lock (and the next
          // test file waiting on it) must not wait on that.
          const hard = setTimeout(() => c.kill('SIGKILL'), STOP_GRACE_MS);
          c.once('exit', () => {
            clearTimeout(hard);
            resolve();
          });
          c.kill('SIGTERM');
        });
      },
    } as NatsNode & { launch(): void; stop(): Promise<void> };
  });
  const internal = nodes as (NatsNode & { launch(): void; stop(): Promise<void> })[];
  for (const n of internal) n.launch();
  const close = async () => {
    await Promise.all(internal.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
    unlock();
  };
  try {
    for (const n of internal) await n.start();
  } catch (err) {
    const logs = internal.map((n) => `--- ${n.name}\n${n.log().slice(-2000)}`).join('\n');
    await close();
    throw new Error(`${(err as Error).message}\n${logs}`);
  }
  return { nodes, mqttUrls: nodes.map((n) => n.mqttUrl), close };
}
