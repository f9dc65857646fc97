// bench/fleet: N simulated boards (bench/fleet/sim-device.ts: the real fleet agent and OTA runner, own MQTT
// connection and SQLite file each) in this process against a real mosquitto, and, when nats-server is
// installed and FLEET_NATS is not 0, against a 3-node NATS cluster. Figures: memory per board, `fleet ls` wall
// time, fan-out command latency p50/p95/p99 and completion, the connect storm after a broker restart (mosquitto)
// or a node kill (NATS), and rollouts run by `mnn-edge ota rollout` in its own process (bench/fleet/
// rollout-figures.ts): wall time against the bandwidth bound, the controller's peak RSS, and the same rollout
// with the controller killed -9 FLEET_KILLS times and resumed, with the broker restarted (mosquitto) or a node
// killed (NATS) mid-rollout, each compared device by device with a rollout without faults.
// FLEET_N (default 1000), FLEET_PKG_BYTES (default 256 KiB), FLEET_KILLS (default 10), FLEET_SEED,
// FLEET_MOSQUITTO=0 / FLEET_NATS=0 leave a broker out, FLEET_FAULTS=0 leaves the faulted rollouts out,
// FLEET_NATS_CONSUMER_REPLICAS sets NATS's mqtt.consumer_replicas (default: as many as the streams, 3).
// FLEET_PROCS > 1 spreads the boards over that many simulator processes (one process's descriptors end near
// 5,000 boards) and measures on mosquitto only what needs no board in this process: all online, memory,
// `fleet ls`, the fan-out and the connect storm after a restart; no rollouts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetOperator } from '../agent/operator/fleet/operator.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import { natsAvailable, startNatsCluster } from '../test/helpers/nats-cluster.js';
import {
  bandwidthRollout,
  faultedRollout,
  killedRollout,
  type RolloutBench,
  referenceRollout,
} from './fleet/rollout-figures.js';
import { type SimFleet, startSimFleet } from './fleet/sim-fleet.js';
import { startSimProcs } from './fleet/sim-procs.js';
import { type SimPackage, simPackages } from './fleet/sim-rollout.js';
import { bar, check, fmt, loadLine } from './lib/stats.js';

const N = Number(process.env['FLEET_N'] ?? 1000);
const PKG = Number(process.env['FLEET_PKG_BYTES'] ?? 256 * 1024);
const KILLS = Number(process.env['FLEET_KILLS'] ?? 10);
const FAULTS = process.env['FLEET_FAULTS'] !== '0';
const PROCS = Number(process.env['FLEET_PROCS'] ?? 1);
const mb = (b: number) => b / 1024 / 1024;

function pct(sorted: number[], q: number): number {
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

async function until(cond: () => boolean, timeoutMs: number, label: string): Promise<number> {
  const t0 = performance.now();
  let lastShown = 0;
  while (!cond()) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${label}: not done within ${timeoutMs} ms`);
    if (performance.now() - lastShown > 5_000) {
      lastShown = performance.now();
      process.stdout.write(`  ${label}: ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return performance.now() - t0;
}

interface Broker {
  name: string;
  urls: string[];
  version: 4 | 5;
  /** The connect storm: every board loses its broker (restart) or a third of them their node (kill). */
  storm(): Promise<void>;
  /** The node the storm kills: its boards count as back only once connected to another one. */
  lostUrl?: string;
  /** After every board is back: a killed node is started again. */
  afterStorm?: () => Promise<void>;
  /** Done to the broker in the middle of a rollout. */
  midRollout: { label: string; fault: () => Promise<void> };
}

/** Boards up, then what the operator tools see: memory, `fleet ls`, a fan-out to everyone. */
async function operatorFigures(
  b: Broker,
  memory: { perDevice: number; rss: number },
  startS: number,
): Promise<void> {
  const { perDevice } = memory;
  console.log(
    `  ${N} boards online in ${fmt(startS, 1)} s; ${fmt(perDevice / 1024, 0)} KiB RSS per board; ${loadLine()}`,
  );
  check(`${b.name}: boards started and online`, startS, 's', 'report', true);
  check(`${b.name}: memory per simulated board`, perDevice / 1024, 'KiB', 'report', true);
  check(
    `${b.name}: ${PROCS > 1 ? `RSS of ${PROCS} simulator processes` : 'process RSS'} with ${N} boards`,
    mb(memory.rss),
    'MB',
    'report',
    true,
  );

  const op = await FleetOperator.connect({ url: b.urls.at(-1)!, protocolVersion: b.version });
  const l0 = performance.now();
  const listed = await op.listDevices(300);
  const lsS = (performance.now() - l0) / 1000;
  check(
    `${b.name}: fleet ls wall time (${listed.length} listed)`,
    lsS,
    's',
    '<= 2',
    lsS <= 2 && listed.length === N,
  );

  await fanOut(b, op, '');
  await op.close();
}

/** One `ping` to every board; the latency of each answer from the publish, and how many answered in 30 s. */
async function fanOut(b: Broker, op: FleetOperator, when: string): Promise<void> {
  const sentAt = performance.now();
  const times: number[] = [];
  const answers = await op.command({ selector: {} }, 'ping', {}, 30_000, () =>
    times.push(performance.now() - sentAt),
  );
  times.sort((x, y) => x - y);
  console.log(`  fan-out ping${when}: ${answers.length}/${N} answered; ${loadLine()}`);
  for (const [q, label] of [
    [0.5, 'p50'],
    [0.95, 'p95'],
    [0.99, 'p99'],
  ] as const)
    check(`${b.name}: fan-out${when} latency ${label}`, pct(times, q), 'ms', 'report', true);
  check(`${b.name}: fan-out${when} completion`, (100 * answers.length) / N, '%', '100', answers.length === N);
}

/**
 * After the connect storm: every board back, then a fan-out. On NATS the survivors elect new JetStream leaders
 * after a node's loss, and boards' re-subscriptions made meanwhile can time out (SUBACK failure, retried with
 * backoff by the subscription registry); a board whose command filter is not back misses the ping.
 */
async function fanOutAfterStorm(b: Broker): Promise<void> {
  const op = await FleetOperator.connect({ url: b.urls.at(-1)!, protocolVersion: b.version });
  try {
    await fanOut(b, op, ' after the connect storm');
  } finally {
    await op.close();
  }
}

async function measure(b: Broker, pkg: SimPackage, targetsFile: string, dir: string, random: () => number) {
  console.log(`\n--- ${b.name}: ${N} boards; ${loadLine()}`);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const fleet: SimFleet = await startSimFleet({
    count: N,
    dir: join(dir, b.name),
    urls: b.urls,
    protocolVersion: b.version,
    ota: { trustedKeys: pkg.trustedKeys },
    // One board in a hundred fails the health gate in every rollout (and rolls back).
    health: (id) => (Number(id.slice(-4)) % 100 === 50 ? 'fail' : 'pass'),
    telemetryIntervalMs: 30_000,
    reconnect: { minMs: 500, maxMs: 10_000 },
    batch: 100,
    onProgress: (n) => process.stdout.write(`${bar('  boards started', n, N, `${n}/${N}`)}\n`),
  });
  try {
    await until(() => fleet.online() === N, 600_000, 'all online');
    const rss = process.memoryUsage().rss;
    await operatorFigures(b, { perDevice: (rss - rssBefore) / N, rss }, (performance.now() - t0) / 1000);

    const s0 = performance.now();
    const onLost = fleet.devices.filter((d) => d.brokerUrl === b.lostUrl).length;
    await b.storm();
    await until(
      () => fleet.online() === N && fleet.devices.every((d) => d.brokerUrl !== b.lostUrl),
      600_000,
      'back online',
    );
    if (b.lostUrl) console.log(`  ${onLost} boards were on the killed node`);
    check(`${b.name}: connect storm, all online again`, (performance.now() - s0) / 1000, 's', 'report', true);
    console.log(`  connect storm over; ${loadLine()}`);
    await fanOutAfterStorm(b);
    await b.afterStorm?.();

    const rb: RolloutBench = {
      name: b.name,
      fleet,
      pkg,
      targetsFile,
      dir,
      broker: b.urls.join(','),
      log: (line) => process.stdout.write(`${line}\n`),
    };
    await bandwidthRollout(rb);
    console.log(`  ${loadLine()}`);
    if (!FAULTS) return;
    const ref = await referenceRollout(rb);
    if (KILLS > 0) await killedRollout(rb, ref.compare, KILLS, random);
    console.log(`  ${loadLine()}`);
    // The fault comes once 20-60 % of the devices are done.
    await faultedRollout(rb, ref.compare, 3, b.midRollout.label, 0.2 + 0.4 * random(), b.midRollout.fault);
    console.log(`  ${loadLine()}`);
  } finally {
    await fleet.stop();
  }
}

/** FLEET_PROCS > 1: the boards in several processes, on mosquitto; no rollouts (no board in this process). */
async function measureProcs(b: Broker, dir: string): Promise<void> {
  const perProc = Math.ceil(N / PROCS);
  console.log(`\n--- ${b.name}: ${N} boards in ${PROCS} processes of ${perProc}; ${loadLine()}`);
  const t0 = performance.now();
  const procs = startSimProcs({ procs: PROCS, perProc, urls: b.urls, protocolVersion: b.version, dir });
  try {
    await until(() => procs.online() >= N, 900_000, `all online (${N})`);
    const rss = procs.rss();
    await operatorFigures(b, { perDevice: rss / N, rss }, (performance.now() - t0) / 1000);
    const s0 = performance.now();
    await b.storm();
    // The processes report every 500 ms: a restart they all got over between two reports shows no dip.
    await until(() => procs.online() < N, 15_000, 'boards noticed the restart').catch(() => undefined);
    await until(() => procs.online() >= N, 900_000, 'back online');
    check(`${b.name}: connect storm, all online again`, (performance.now() - s0) / 1000, 's', 'report', true);
    console.log(`  connect storm over; ${loadLine()}`);
  } finally {
    await procs.stop();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-fleet-'));
const seed = Number(process.env['FLEET_SEED'] ?? Date.now() % 1_000_000);
console.log(`fleet bench: N=${N}, seed ${seed} (FLEET_SEED repeats it), ${loadLine()}`);
const random = mulberry32(seed);
try {
  const pkg = await simPackages(dir, PKG, ['2.0.0', '3.0.0', '4.0.0', '5.0.0']);
  const targetsFile = join(dir, 'targets.json');
  writeFileSync(targetsFile, JSON.stringify(pkg.targets));
  if (process.env['FLEET_MOSQUITTO'] !== '0') {
    const mosq = await startMosquitto({ persistence: true, extraConfig: ['max_connections -1'] });
    // With a thousand persistent sessions to load, mosquitto may take longer to listen than the helper's 5 s.
    const restart = async () => {
      await mosq.stop();
      for (let tries = 0; ; tries++) {
        try {
          await mosq.start();
          break;
        } catch (err) {
          if (tries >= 24) throw err;
        }
      }
    };
    try {
      await (PROCS > 1
        ? (b: Broker) => measureProcs(b, join(dir, 'procs'))
        : (b: Broker) => measure(b, pkg, targetsFile, dir, random))({
        name: 'mosquitto',
        urls: [mosq.url],
        version: 5,
        storm: restart,
        midRollout: { label: 'broker restart', fault: restart },
      });
    } finally {
      await mosq.close();
    }
  }
  if (natsAvailable() && process.env['FLEET_NATS'] !== '0' && PROCS <= 1) {
    const consumers = Number(process.env['FLEET_NATS_CONSUMER_REPLICAS'] ?? 0);
    const cluster = await startNatsCluster({
      streamReplicas: 3,
      ...(consumers > 0 ? { consumerReplicas: consumers } : {}),
    });
    try {
      await measure(
        {
          name: 'nats-3-node',
          urls: cluster.mqttUrls,
          version: 4,
          // Node 1 dies for the storm and comes back; node 2 dies mid-rollout.
          storm: () => cluster.nodes[0]!.kill(),
          lostUrl: cluster.mqttUrls[0]!,
          // Back before the rollouts: with one node left of three, the streams' quorum would be gone.
          afterStorm: () => cluster.nodes[0]!.start(),
          midRollout: { label: 'node 2 killed', fault: () => cluster.nodes[1]!.kill() },
        },
        pkg,
        targetsFile,
        dir,
        random,
      );
    } finally {
      await cluster.close();
    }
  } else console.log('SKIP nats-3-node: nats-server absent or FLEET_NATS=0');
  await pkg.server.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`fleet bench done; ${loadLine()}`);
process.exit(0);
