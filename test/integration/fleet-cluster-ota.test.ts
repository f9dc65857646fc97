import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { connectAsync } from 'mqtt';
import { boardProblems, readRollout } from '../../bench/fleet/controller-runs.js';
import { type SimFleet, startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { type SimPackage, simPackages } from '../../bench/fleet/sim-rollout.js';
import { fleetTopics } from '../../lib/topics.js';
import { otaDefaults } from '../../ota/config.js';
import { type NatsCluster, natsSkipReason, startNatsCluster } from '../helpers/nats-cluster.js';
import { runCli } from '../helpers/run-cli.js';

// OTA on a real 3-node NATS cluster (MQTT 3.1.1 + JetStream, stream replicas 3): simulated boards (the real
// fleet agent and OTA runner each) spread over the nodes, the operator's `mnn-edge ota rollout` on another
// node, asking for MQTT 5 and falling back to 3.1.1 as NATS requires. Jobs, retained statuses and the
// rollout's phases cross nodes; then a node dies in the middle of a rollout: its boards move to the others,
// and no job, status or telemetry message is lost.

const skipped = natsSkipReason();
if (skipped) console.log(`fleet-cluster-ota: skipped, ${skipped}`);
const gate = skipped ? test.skip : test.serial;

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

interface Setup {
  cluster: NatsCluster;
  dir: string;
  pkg: SimPackage;
  targetsFile: string;
  fleet: SimFleet;
}

/** `budgetMs`: the test's timeout from once it has its cluster (waiting for another file's comes first). */
async function setup(t: import('ava').ExecutionContext, count: number, budgetMs: number): Promise<Setup> {
  // Room to wait for another file's cluster first (one at a time, see startNatsCluster); then the test's budget.
  t.timeout(600_000);
  const cluster = await startNatsCluster({ streamReplicas: 3 });
  t.timeout(budgetMs);
  t.teardown(() => cluster.close());
  const dir = mkdtempSync(join(tmpdir(), 'fleet-cluster-ota-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = await simPackages(dir, 64 * 1024, ['2.0.0']);
  t.teardown(() => pkg.server.close());
  const targetsFile = join(dir, 'targets.json');
  writeFileSync(targetsFile, JSON.stringify(pkg.targets));
  // Board i starts on node i mod 3 and moves on from there. A capped download rate makes each phase last
  // seconds, so that a node can die while jobs run.
  const fleet = await startSimFleet({
    count,
    dir,
    urls: cluster.mqttUrls,
    protocolVersion: 4,
    ota: {
      trustedKeys: pkg.trustedKeys,
      download: { ...otaDefaults.download, maxBytesPerSecond: 32 * 1024 },
    },
    telemetryIntervalMs: 1_000,
    reconnect: { minMs: 200, maxMs: 2_000 },
  });
  t.teardown(() => fleet.stop());
  t.true(await until(() => fleet.online() === count, 90_000), `online: ${fleet.online()} of ${count}`);
  return { cluster, dir, pkg, targetsFile, fleet };
}

function rolloutArgv(s: Setup, broker: string, phases: string): string[] {
  return [
    'ota',
    'rollout',
    'start',
    '--id',
    'r1',
    '--targets',
    s.targetsFile,
    '--package',
    'tiny-llm@2.0.0',
    '--devices',
    s.fleet.devices.map((d) => d.id).join(','),
    '--broker',
    broker,
    '--url',
    s.pkg.server.baseUrl,
    '--phases',
    phases,
    '--job-timeout',
    '5m',
    '--state',
    join(s.dir, 'operator.db'),
  ];
}

gate(
  'a rollout from node 3 to boards on nodes 1 and 2: jobs and retained statuses cross nodes',
  async (t) => {
    const s = await setup(t, 6, 240_000);
    const [n1, n2, n3] = s.cluster.mqttUrls as [string, string, string];
    const elsewhere = s.fleet.devices.filter((d) => d.brokerUrl === n1 || d.brokerUrl === n2).length;
    t.true(elsewhere >= 4, 'most boards are on nodes 1 and 2');
    // The operator names node 3 only and leaves the protocol level out: MQTT 5 is refused, 3.1.1 is used.
    const r = await runCli(...rolloutArgv(s, n3, '1,100%'));
    t.is(r.code, 0, r.err);
    t.regex(r.err, /refused MQTT 5; using MQTT 3\.1\.1/);
    const view = readRollout(join(s.dir, 'operator.db'), 'r1')!;
    t.is(view.message, 'all 6 devices updated');
    t.deepEqual(boardProblems(s.fleet, view, '2.0.0'), []);
    // The retained statuses, published on nodes 1 and 2, read through node 3 by `ota status`.
    const st = await runCli(
      'ota',
      'status',
      '--broker',
      n3,
      '--state',
      join(s.dir, 'operator.db'),
      '--devices-too',
    );
    t.is(st.code, 0, st.err);
    for (const d of s.fleet.devices) t.regex(st.out, new RegExp(`${d.id}\\s+r1\\.${d.id}\\s+succeeded`));
  },
);

/** Every telemetry message of every board, as a QoS 1 subscriber on `url` receives them. */
async function telemetryLog(
  url: string,
): Promise<{ seqs: Map<string, Set<number>>; close: () => Promise<void> }> {
  const seqs = new Map<string, Set<number>>();
  // Retries off (the third argument): a node that closes the socket before its CONNACK is an error here, where
  // mqtt.js's default would wait for a reconnect that reconnectPeriod 0 never makes.
  const c = await connectAsync(url, { protocolVersion: 4, clean: true, reconnectPeriod: 0 }, false);
  c.on('message', (_topic, payload) => {
    const m = JSON.parse(payload.toString()) as { deviceId: string; seq: number };
    const set = seqs.get(m.deviceId) ?? new Set<number>();
    set.add(m.seq);
    seqs.set(m.deviceId, set);
  });
  await c.subscribeAsync(fleetTopics.allTelemetry, { qos: 1 });
  return { seqs, close: () => c.endAsync(true) };
}

/** Per board, the sequence numbers missing between the first and the last received. */
function gaps(seqs: Map<string, Set<number>>): string[] {
  const out: string[] = [];
  for (const [id, set] of seqs) {
    const sorted = [...set].sort((a, b) => a - b);
    const missing: number[] = [];
    for (let n = sorted[0]!; n <= sorted.at(-1)!; n++) if (!set.has(n)) missing.push(n);
    if (missing.length > 0) out.push(`${id}: missing ${missing.join(',')}`);
  }
  return out;
}

gate(
  'node 1 dies mid-rollout: its boards move on, no job, status or telemetry message is lost',
  async (t) => {
    const N = 12;
    const s = await setup(t, N, 400_000);
    const [n1, n2, n3] = s.cluster.mqttUrls as [string, string, string];
    const onN1 = s.fleet.devices.filter((d) => d.brokerUrl === n1).map((d) => d.id);
    t.true(onN1.length >= 2, 'some boards are on node 1');
    const telemetry = await telemetryLog(n3);
    t.teardown(() => telemetry.close());
    t.true(await until(() => telemetry.seqs.size === N, 60_000), 'telemetry from every board');

    const state = join(s.dir, 'operator.db');
    const rollout = runCli(...rolloutArgv(s, `${n3},${n2}`, '25%,50%,100%'));
    // Node 1 dies once the first phase's jobs are out and before the rollout is over.
    t.true(
      await until(
        () => readRollout(state, 'r1')?.devices.some((d) => d.state !== 'pending') ?? false,
        120_000,
      ),
      'jobs out',
    );
    const killedAt = Date.now();
    const seqAtKill = new Map([...telemetry.seqs].map(([id, set]) => [id, Math.max(...set)]));
    await s.cluster.nodes[0]!.kill();
    t.true(
      await until(
        () => s.fleet.online() === N && onN1.every((id) => s.fleet.byId(id)?.brokerUrl !== n1),
        120_000,
      ),
      `online after the kill: ${s.fleet.online()}`,
    );
    t.log(`the boards of node 1 were online on other nodes ${Date.now() - killedAt} ms after the kill`);
    // Not a condition of what follows (the rollout and the boards carry on through the election): how long the
    // survivors' JetStream took to elect the leaders node 1 had, for the log.
    const electedMs = await s.cluster.waitHealthy(120_000);
    t.log(
      `the survivors' JetStream healthy ${Date.now() - killedAt} ms after the kill (${electedMs} ms waited)`,
    );
    const r = await rollout;
    t.is(r.code, 0, r.err);
    const view = readRollout(state, 'r1')!;
    t.is(view.message, `all ${N} devices updated`);
    t.deepEqual(boardProblems(s.fleet, view, '2.0.0'), [], 'every job arrived once, every status came back');
    // Telemetry: every board's messages after the kill arrive (the outbox keeps what node 1 never acknowledged).
    t.true(
      await until(
        () => [...seqAtKill].every(([id, seq]) => Math.max(...(telemetry.seqs.get(id) ?? [0])) >= seq + 3),
        120_000,
      ),
      'telemetry flows again from every board',
    );
    t.deepEqual(gaps(telemetry.seqs), [], 'no telemetry message lost');
  },
);
