import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { simPackage } from '../../bench/fleet/sim-rollout.js';
import { connectOperator, publishJob } from '../../ota/tools/publish.js';
import { MOSQUITTO_BIN, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';
import { natsSkipReason, startNatsCluster } from '../helpers/nats-cluster.js';

// What each subscription's QoS promises a device that was away (docs/PROTOCOL.md, "Subscriptions and their
// QoS"): only its own command filter is QoS 1, so a request to it waits in its broker session; a fleet command
// sent while it was away is not delivered to it; a tag's OTA job, on a QoS 0 filter, still reaches it when it
// is back, from the retained copy. On mosquitto (MQTT 5 and 3.1.1) and on a 3-node NATS cluster, whose QoS 0
// subscriptions are plain NATS subscriptions instead of JetStream consumers.

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !cond()) await new Promise((r) => setTimeout(r, 100));
  return cond();
}

async function awayAndBack(
  t: ExecutionContext,
  urls: { boards: string[]; operator: string },
  protocolVersion: 4 | 5,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-offline-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = await simPackage(dir, 16 * 1024);
  t.teardown(() => pkg.server.close());
  // Board 0 has the tags sim and even, board 1 sim and odd.
  const fleet = await startSimFleet({
    count: 2,
    dir,
    urls: urls.boards,
    protocolVersion,
    ota: { trustedKeys: pkg.trustedKeys },
    telemetryIntervalMs: 5_000,
    reconnect: { minMs: 200, maxMs: 2_000 },
  });
  t.teardown(() => fleet.stop());
  t.true(await until(() => fleet.online() === 2, 60_000), `online: ${fleet.online()} of 2`);
  const [away, stays] = fleet.devices as [(typeof fleet.devices)[0], (typeof fleet.devices)[0]];
  t.deepEqual(
    away.agent?.subscriptions
      .state()
      .filter((s) => s.qos === 1)
      .map((s) => s.filter),
    [`mnn-edge/${away.id}/cmd/+`],
    'one QoS 1 filter per board',
  );

  const op = await FleetOperator.connect({ url: urls.operator, protocolVersion });
  t.teardown(() => op.close());
  const ota = await connectOperator({ url: urls.operator, protocolVersion });
  t.teardown(() => ota.close());

  await away.stop();
  t.log('board 0 stopped');
  // While it is away: a request to it, a fleet command to its tag, and a job for its tag.
  const own = op.command({ deviceId: away.id }, 'ping', { echo: 'own' }, 120_000);
  own.catch(() => undefined);
  const fleetWide = op.command({ selector: { tags: ['even'] } }, 'ping', { echo: 'fleet' }, 3_000);
  await publishJob(
    ota,
    { tag: 'even' },
    {
      jobId: 'job-while-away',
      package: pkg.package,
      targets: pkg.targets,
      baseUrl: pkg.server.baseUrl,
    },
  );
  // The fleet command's answers are gathered before the board is back: nobody had it.
  t.deepEqual(await fleetWide, [], 'the fleet command sent while the board was away reached nobody');

  t.log('fleet command gathered; starting board 0 again');
  await away.start();
  const answer = await own;
  t.log('own command answered');
  t.is(answer[0]?.deviceId, away.id, 'the request to the board waited in its session and was answered');
  t.like(answer[0]?.result, { echo: 'own' });
  t.true(
    await until(() => away.active === pkg.package.version, 60_000),
    `the tag job published while the board was away reached it (active: ${away.active})`,
  );
  t.deepEqual([...away.activations], [[pkg.package.version, 1]]);
  t.is(stays.activations.size, 0, 'a board without the tag got nothing');
}

const mosquittoGate = mosquittoAvailable() ? test.serial : test.skip;
if (!mosquittoAvailable()) console.log(`fleet-offline-delivery: mosquitto skipped (${MOSQUITTO_BIN} absent)`);

for (const protocolVersion of [5, 4] as const) {
  mosquittoGate(
    `mosquitto, MQTT ${protocolVersion}: what a board gets of what was sent while it was away`,
    async (t) => {
      t.timeout(170_000);
      const broker = await startMosquitto({ persistence: true });
      t.teardown(() => broker.close());
      await awayAndBack(t, { boards: [broker.url], operator: broker.url }, protocolVersion);
    },
  );
}

const natsSkipped = natsSkipReason();
if (natsSkipped) console.log(`fleet-offline-delivery: NATS skipped, ${natsSkipped}`);
(natsSkipped ? test.skip : test.serial)(
  'NATS 3-node cluster, MQTT 3.1.1: the same, the board on node 1 and the operator on node 3',
  async (t) => {
    // Room to wait for another file's cluster first (one at a time, see startNatsCluster); then the test's budget.
    t.timeout(600_000);
    const cluster = await startNatsCluster({ streamReplicas: 3 });
    t.timeout(170_000);
    t.teardown(() => cluster.close());
    const [n1, n2, n3] = cluster.mqttUrls as [string, string, string];
    await awayAndBack(t, { boards: [n1, n2], operator: n3 }, 4);
  },
);
