import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import { simDeviceId, startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { simPackage } from '../../bench/fleet/sim-rollout.js';
import { connectOperator, driveRollout, publishJob } from '../../ota/tools/publish.js';
import { parsePhases, RolloutController } from '../../ota/tools/rollout.js';
import { parseAbortCriteria } from '../../ota/tools/rollout-policy.js';
import { MOSQUITTO_BIN, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// The small-N fleet (bench/fleet runs the same at N = 1,000): simulated boards built from the real fleet agent and
// OTA runner, each with its own MQTT connection and SQLite file, on a real mosquitto. The operator tools list
// them and fan a command out; a rollout in which 10 % of phase 1 fail the health gate stops inside phase 1.

const N = 20;
const skipped = mosquittoAvailable() ? undefined : `mosquitto not found at ${MOSQUITTO_BIN}`;
if (skipped) console.log(`fleet-sim: skipped, ${skipped}`);
const gate = skipped ? test.skip : test.serial;

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !cond()) await new Promise((r) => setTimeout(r, 100));
  return cond();
}

gate(
  `${N} simulated boards: fleet ls, fan-out, and a rollout stopped by the health gate inside phase 1`,
  async (t) => {
    t.timeout(170_000);
    const dir = mkdtempSync(join(tmpdir(), 'fleet-sim-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const broker = await startMosquitto({ persistence: true });
    t.teardown(() => broker.close());
    const pkg = await simPackage(dir, 64 * 1024);
    t.teardown(() => pkg.server.close());
    // Phase 1 is the first 10 boards; one of them (10 %) fails the health gate.
    const unhealthy = simDeviceId('sim', 3);
    const fleet = await startSimFleet({
      count: N,
      dir,
      urls: [broker.url],
      protocolVersion: 5,
      ota: { trustedKeys: pkg.trustedKeys },
      health: (id) => (id === unhealthy ? 'fail' : 'pass'),
      telemetryIntervalMs: 1_000,
      reconnect: { minMs: 200, maxMs: 2_000 },
    });
    t.teardown(() => fleet.stop());
    t.true(await until(() => fleet.online() === N, 60_000), `online: ${fleet.online()} of ${N}`);

    const op = await FleetOperator.connect({ url: broker.url });
    t.teardown(() => op.close());
    // Telemetry carries the slot's model once the first interval passed.
    await new Promise((r) => setTimeout(r, 1_500));
    const listed = await op.listDevices(500);
    t.is(listed.length, N);
    t.true(listed.every((d) => d.status?.state === 'online' && d.status.board?.family !== undefined));
    const answers = await op.command({ selector: { tags: ['even'] } }, 'ping', {}, 5_000);
    t.is(answers.length, N / 2);

    const client = await connectOperator({ url: broker.url });
    t.teardown(() => client.close());
    const db = openStore(join(dir, 'operator.db'));
    t.teardown(() => void db.close());
    const ctl = new RolloutController(db, (deviceId, job) => publishJob(client, { device: deviceId }, job));
    ctl.create({
      rolloutId: 'r1',
      package: pkg.package,
      targets: pkg.targets,
      baseUrl: pkg.server.baseUrl,
      devices: fleet.devices.map((d) => d.id),
      phases: parsePhases('50%,100%'),
      successThreshold: 0.8,
      errorThreshold: 1,
      abort: parseAbortCriteria('rolled-back:5%', 5),
      jobTimeoutMs: 60_000,
    });
    const final = await driveRollout(client, ctl, 'r1');
    t.is(final.state, 'stopped', final.message);
    t.is(final.phase, 0);
    t.regex(final.message ?? '', /failed the health gate and rolled back/);
    const bad = final.devices.find((d) => d.deviceId === unhealthy);
    t.is(bad?.state, 'rolled-back');
    t.regex(bad?.reason ?? '', /^health-gate: /);
    t.deepEqual(
      final.devices.filter((d) => d.ordinal >= N / 2 && d.state !== 'pending').map((d) => d.deviceId),
      [],
      'no job went to phase 2',
    );
    t.true(fleet.devices.slice(N / 2).every((d) => d.activations.size === 0));
    t.deepEqual(fleet.doubleInstalls(), []);
  },
);
