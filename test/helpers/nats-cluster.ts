import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'mqtt';

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
  /** The node's monitoring endpoint (/healthz, /jsz). */
  readonly monitorUrl: string;
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
  /**
   * Until every running node's JetStream is healthy (/healthz: a meta leader, and each stream and consumer it
   * holds a copy of current with its leader); resolves with the milliseconds waited, rejects after `timeoutMs`
   * with the last node's reason.
   */
  waitHealthy(timeoutMs: number): Promise<number>;
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

/**
 * `count` distinct free ports. All are held open until every one is known, then released together: picked one by
 * one, a port closed a moment earlier can be handed out again, and two nodes then fight over it ("bind: address
 * already in use", seen in a CI run).
 */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (srv) =>
          new Promise<number>((resolve, reject) => {
            srv.once('error', reject);
            srv.listen(0, '127.0.0.1', () => {
              const addr = srv.address();
              resolve(typeof addr === 'object' && addr ? addr.port : 0);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(
      servers.map((srv) => new Promise<void>((r) => (srv.listening ? srv.close(() => r()) : r()))),
    );
  }
}

function alive(p: ChildProcess | undefined): boolean {
  return p !== undefined && p.exitCode === null && p.signalCode === null;
}

const CONNACK_WAIT_MS = 5_000;
const SUBACK_WAIT_MS = 5_000;
const STOP_GRACE_MS = 5_000;
const START_HEALTH_WAIT_MS = 60_000;

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

/**
 * One probe: connect, SUBSCRIBE at QoS 1, disconnect; undefined when the subscription was granted, else why not.
 * Every wait is bounded. mqtt.js's connectAsync (with its retries allowed, the default) never settles when the
 * server closes the socket before a CONNACK, and nats-server does exactly that when a CONNECT's JetStream work
 * fails (`unable to connect: …`, closed as a protocol violation): the probe of a node whose JetStream was not
 * ready yet then held the cluster's start, and the test file and the cluster lock, until ava's timeout (seen
 * beside the CPU hog: one closed connection on n1 13 ms after its start, then no other attempt for 5 minutes).
 */
async function probeMqtt(url: string): Promise<string | undefined> {
  const c = connect(url, {
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: CONNACK_WAIT_MS,
    clientId: `probe-${Math.random().toString(36).slice(2, 10)}`,
  });
  c.on('error', () => undefined); // reported through the close below
  try {
    const acked = await within(
      new Promise<string | undefined>((resolve) => {
        c.once('connect', () => resolve(undefined));
        c.once('close', () => resolve('closed before CONNACK'));
      }),
      CONNACK_WAIT_MS + 1_000,
    );
    if (acked !== undefined) return acked;
    const subscribed = c.subscribeAsync('mnn-edge/probe', { qos: 1 });
    subscribed.catch(() => {}); // once given up on, the forced end below rejects it: nobody listens then
    // A node whose JetStream has no leader yet leaves a SUBSCRIBE unanswered for its JS API timeout (4 s).
    const granted = await within(subscribed, SUBACK_WAIT_MS);
    if (granted === undefined) return `SUBSCRIBE unanswered for ${SUBACK_WAIT_MS} ms`;
    return granted.every((g) => g.qos === 1)
      ? undefined
      : `subscription refused (${JSON.stringify(granted)})`;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await within(
      c.endAsync(true).catch(() => undefined),
      2_000,
    );
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
    const why = await probeMqtt(url);
    if (why === undefined) return;
    last = why;
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
  const free = await freePorts(4 * size);
  const ports = Array.from({ length: size }, (_, i) => ({
    client: free[4 * i]!,
    cluster: free[4 * i + 1]!,
    mqtt: free[4 * i + 2]!,
    http: free[4 * i + 3]!,
  }));
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
        `http: 127.0.0.1:${p.http}`,
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
      const trace = process.env['MNN_EDGE_NATS_TRACE'] === '1' ? ['-DV'] : [];
      const child = spawn(NATS_BIN, ['-c', conf, ...trace], { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr?.on('data', (d: Buffer) => {
        // Bounded: a long bench must not grow the test's memory with the server's log.
        output = (output + d.toString()).slice(-(trace.length > 0 ? 50_000_000 : 200_000));
      });
      proc = child;
    };
    return {
      name,
      mqttUrl,
      monitorUrl: `http://127.0.0.1:${p.http}`,
      get running() {
        return alive(proc);
      },
      async kill() {
        const c = proc;
        if (!c || !alive(c)) return;
        if (process.env['MNN_EDGE_NATS_DEBUG_DIR'])
          console.log(`${new Date().toISOString().slice(11, 23)} killing ${name}`);
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
  const debugRoot = process.env['MNN_EDGE_NATS_DEBUG_DIR'];
  const debugDir = debugRoot
    ? join(debugRoot, `${new Date().toISOString().slice(11, 19)}-${process.pid}`)
    : undefined;
  const stopDebug = debugDir ? recordHealth(nodes, debugDir) : undefined;
  const close = async () => {
    stopDebug?.();
    if (debugDir) for (const n of nodes) writeFileSync(join(debugDir, `${n.name}.log`), n.log());
    await Promise.all(internal.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
    unlock();
  };
  const waitHealthy = (timeoutMs: number) => waitForJetStream(nodes, timeoutMs);
  try {
    for (const n of internal) await n.start();
    // The MQTT streams' copies catch up after the first node created them: boards that connect before that
    // find their first writes waiting on a stream that is still electing.
    await waitHealthy(START_HEALTH_WAIT_MS);
  } catch (err) {
    const logs = internal.map((n) => `--- ${n.name}\n${n.log().slice(-2000)}`).join('\n');
    await close();
    throw new Error(`${(err as Error).message}\n${logs}`);
  }
  return { nodes, mqttUrls: nodes.map((n) => n.mqttUrl), waitHealthy, close };
}

interface Jsz {
  meta_cluster?: { leader?: string };
  account_details?: {
    stream_detail?: {
      name: string;
      cluster?: { leader?: string };
      consumer_detail?: { name: string; cluster?: { leader?: string } }[];
    }[];
  }[];
}

/**
 * A node's JetStream: undefined when healthy, else why not. Healthy is /healthz ok and, for the meta group and
 * every stream and consumer, a leader this node knows that is a running node. /healthz alone reads ok for a
 * second or two after a node dies: the survivors' copies count as current until a heartbeat is overdue.
 */
async function nodeHealth(n: NatsNode, running: ReadonlySet<string>): Promise<string | undefined> {
  try {
    const signal = AbortSignal.timeout(2_000);
    const health = (await (await fetch(`${n.monitorUrl}/healthz`, { signal })).json()) as {
      status: string;
      error?: string;
    };
    if (health.status !== 'ok') return `${n.name}: ${health.error ?? health.status}`;
    const jsz = (await (
      await fetch(`${n.monitorUrl}/jsz?accounts=true&streams=true&consumers=true`, { signal })
    ).json()) as Jsz;
    const leaderless: string[] = [];
    const check = (what: string, leader: string | undefined) => {
      if (leader === undefined || !running.has(leader))
        leaderless.push(`${what} (leader ${leader ?? 'none'})`);
    };
    check('meta', jsz.meta_cluster?.leader);
    for (const acc of jsz.account_details ?? [])
      for (const st of acc.stream_detail ?? []) {
        check(st.name, st.cluster?.leader);
        for (const c of st.consumer_detail ?? []) check(`${st.name} > ${c.name}`, c.cluster?.leader);
      }
    return leaderless.length === 0 ? undefined : `${n.name}: no live leader for ${leaderless.join(', ')}`;
  } catch (err) {
    return `${n.name}: ${(err as Error).message}`;
  }
}

async function waitForJetStream(nodes: readonly NatsNode[], timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const live = nodes.filter((n) => n.running);
    const running = new Set(live.map((n) => n.name));
    const reasons = (await Promise.all(live.map((n) => nodeHealth(n, running)))).filter(
      (r): r is string => r !== undefined,
    );
    if (reasons.length === 0) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`NATS JetStream not healthy within ${timeoutMs} ms: ${reasons.join('; ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Debugging aid (MNN_EDGE_NATS_DEBUG_DIR): every node's /healthz once a second into `dir`/health.log; the
 * nodes' logs are written there on close (MNN_EDGE_NATS_TRACE=1 makes them protocol traces, -DV).
 */
function recordHealth(nodes: readonly NatsNode[], dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const t0 = Date.now();
  let lines = '';
  const timer = setInterval(() => {
    void Promise.all(
      nodes.map(async (n) => {
        const running = new Set(nodes.filter((m) => m.running).map((m) => m.name));
        return n.running ? ((await nodeHealth(n, running)) ?? `${n.name}: ok`) : `${n.name}: down`;
      }),
    ).then((states) => {
      const at = `${new Date().toISOString().slice(11, 23)} +${((Date.now() - t0) / 1000).toFixed(1)}s`;
      lines += `${at} ${states.join(' | ')}\n`;
      writeFileSync(join(dir, 'health.log'), lines);
    });
  }, 1_000);
  return () => clearInterval(timer);
}
