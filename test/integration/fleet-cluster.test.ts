import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { natsSkipReason, startNatsCluster } from '../helpers/nats-cluster.js';
import { runCli } from '../helpers/run-cli.js';

// A real 3-node NATS cluster (MQTT 3.1.1 + JetStream, stream replicas 3) on loopback: simulated boards spread
// over the nodes, the operator tools on another node. Presence, commands and retained documents cross nodes;
// then a node is killed: its boards move to the others within mqtt.reconnect, and the operator tools, whose
// node it was, carry on from the next one (what used to end in "Subscribe error: Unspecified error").

const skipped = natsSkipReason();
if (skipped) console.log(`fleet-cluster: skipped, ${skipped}`);
const gate = skipped ? test.skip : test.serial;

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

async function untilAsync(cond: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return cond();
}

gate('boards on three NATS nodes; a node dies; boards and operator tools move on', async (t) => {
  // Room to wait for another file's cluster first (one at a time, see startNatsCluster); then the test's budget.
  t.timeout(600_000);
  const cluster = await startNatsCluster({ streamReplicas: 3 });
  t.timeout(300_000);
  t.teardown(() => cluster.close());
  const dir = mkdtempSync(join(tmpdir(), 'fleet-cluster-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [n1, n2, n3] = cluster.mqttUrls as [string, string, string];
  // Board i starts on node i mod 3 and moves on from there.
  const fleet = await startSimFleet({
    count: 6,
    dir,
    urls: [n1, n2, n3],
    protocolVersion: 4,
    ota: { trustedKeys: [] },
    telemetryIntervalMs: 1_000,
    reconnect: { minMs: 200, maxMs: 2_000 },
  });
  t.teardown(() => fleet.stop());
  t.true(await until(() => fleet.online() === 6, 60_000), `online: ${fleet.online()} of 6`);
  const onN1 = fleet.devices.filter((d) => d.brokerUrl === n1).map((d) => d.id);
  t.true(onN1.length >= 1, 'some boards are on n1');

  // Presence and retained documents published through n1/n2, read through n3.
  const ls = await runCli(
    'fleet',
    'ls',
    '--url',
    `${n3},${n1}`,
    '--mqtt-version',
    '4',
    '--json',
    '--wait',
    '800',
  );
  t.is(ls.code, 0, ls.err);
  const listed = JSON.parse(ls.out) as { deviceId: string; status?: { state: string }; documents: object }[];
  t.is(listed.filter((d) => d.status?.state === 'online').length, 6);
  t.true(listed.every((d) => 'models' in d.documents));

  // A command from n3 reaches a board on n1 (3.1.1: response topic in the payload) and is answered.
  const op = await FleetOperator.connect({ url: [n3, n2], protocolVersion: 4 });
  t.teardown(() => op.close());
  const answers = await op.command({ selector: { tags: ['sim'] } }, 'ping', {}, 5_000);
  t.is(answers.length, 6);

  // n1 dies. Its boards reconnect elsewhere; an operator whose first node was n1 carries on.
  const killedAt = Date.now();
  await cluster.nodes[0]!.kill();
  t.true(
    await until(() => fleet.online() === 6 && onN1.every((id) => fleet.byId(id)?.brokerUrl !== n1), 90_000),
    `online after the kill: ${fleet.online()}`,
  );
  t.log(`boards of the lost node back online on other nodes after ${Date.now() - killedAt} ms`);
  // The streams and consumers n1 led elect new leaders on the survivors (raft: 4-9 s in nats-server 2.9, longer
  // on a starved machine). Until then every retained or QoS 1 publish on a survivor waits up to 4 s for
  // JetStream in its connection's read loop, and a board's answer queued behind its republished status and
  // telemetry comes late (2-4 of 6 within 4 s in runs beside the hog). That is the cluster's recovery, not the
  // boards': wait for it, then every board must answer (docs/FLEET.md, "NATS: what a lost node needs").
  const electedMs = await cluster.waitHealthy(120_000);
  t.log(
    `the survivors' JetStream healthy ${Date.now() - killedAt} ms after the kill (${electedMs} ms waited)`,
  );
  // A retained "online" a board sent while its stream had no leader was acknowledged and dropped, and a Last
  // Will of a connection the election closed can land after it: each board reads its own status back until the
  // broker holds its "online" (presence-guard.ts, 1 s doubling to a minute), so the listing converges.
  type Listed = { deviceId: string; status?: { state: string } };
  let again: Listed[] = [];
  let lastErr = '';
  const converged = await untilAsync(async () => {
    const after = await runCli(
      'fleet',
      'ls',
      '--url',
      `${n1},${n3}`,
      '--mqtt-version',
      '4',
      '--json',
      '--wait',
      '800',
    );
    lastErr = after.err;
    if (after.code !== 0) return false;
    again = JSON.parse(after.out) as Listed[];
    return again.length === 6 && again.every((d) => d.status?.state === 'online');
  }, 120_000);
  t.log(`every board listed online through the survivors ${Date.now() - killedAt} ms after the kill`);
  t.true(
    converged,
    `listed not online: ${JSON.stringify(again.filter((d) => d.status?.state !== 'online').map((d) => d.deviceId))} (${again.length} listed) ${lastErr}`,
  );
  const pong = await op.command({ selector: { tags: ['sim'] } }, 'ping', {}, 8_000);
  t.is(pong.length, 6, 'every board answers through the surviving nodes');
});
