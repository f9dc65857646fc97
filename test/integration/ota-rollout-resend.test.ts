import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { simDeviceId, startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { simPackage } from '../../bench/fleet/sim-rollout.js';
import { otaTopics } from '../../ota/jobs/job.js';
import { connectOperator, driveRollout, type OtaBus, publishJob } from '../../ota/tools/publish.js';
import { jobIdFor, parsePhases, RolloutController } from '../../ota/tools/rollout.js';
import { MOSQUITTO_BIN, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// The rollout controller sends a job no device status answered again (driveRollout's resendUnansweredMs),
// because a broker can acknowledge a retained job it did not keep: a NATS node whose retained-message stream is
// electing a leader does (docs/FLEET.md, "While the survivors elect new leaders"). Here the loss is made on
// purpose between the controller and a real mosquitto: one board's first job publication never reaches the
// broker (no live copy, no retained one), and another board's answers are dropped on their way to the
// controller until its job went out a second time. Both boards are simulated ones (the real fleet agent and OTA
// runner each). The rollout must complete with the same job id sent again to both, and no board may install
// twice. Without the re-send the first board never hears of its job and the rollout never ends.

const skipped = mosquittoAvailable() ? undefined : `mosquitto not found at ${MOSQUITTO_BIN}`;
if (skipped) console.log(`ota-rollout-resend: skipped, ${skipped}`);
const gate = skipped ? test.skip : test;

/** A job or a status payload's job id, for the log of what went where. */
function jobIdOf(payload: string | Buffer): string | undefined {
  try {
    const v = JSON.parse(payload.toString()) as { jobId?: unknown };
    return typeof v.jobId === 'string' ? v.jobId : undefined;
  } catch {
    return undefined;
  }
}

interface LossyBus extends OtaBus {
  /** Job ids published per job topic, in order, including the publication that was lost. */
  readonly jobs: Map<string, string[]>;
}

/**
 * The operator's link with two losses: the first job publication to `lostJob` is acknowledged and dropped (what
 * the NATS node did), and `deafTo`'s statuses are dropped until its job was published twice.
 */
function lossyBus(link: OtaBus, lostJob: string, deafTo: string): LossyBus {
  const jobs = new Map<string, string[]>();
  const sentTimes = (deviceId: string) => jobs.get(otaTopics.deviceJobs(deviceId))?.length ?? 0;
  return {
    jobs,
    async publish(topic, payload, opts) {
      const id = jobIdOf(payload);
      if (topic.endsWith('/ota/jobs') && id !== undefined) jobs.set(topic, [...(jobs.get(topic) ?? []), id]);
      if (topic === otaTopics.deviceJobs(lostJob) && sentTimes(lostJob) === 1) return;
      await link.publish(topic, payload, opts);
    },
    onMessage(handler) {
      return link.onMessage((topic, payload, packet) => {
        if (topic === otaTopics.deviceStatus(deafTo) && sentTimes(deafTo) < 2) return;
        handler(topic, payload, packet);
      });
    },
    subscribe: (filters, qos) => link.subscribe(filters, qos),
    unsubscribe: (filters) => link.unsubscribe(filters),
    close: () => link.close(),
  };
}

gate('a job lost by the broker, or whose answers were lost, goes out again with the same id', async (t) => {
  t.timeout(300_000);
  const dir = mkdtempSync(join(tmpdir(), 'ota-rollout-resend-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const pkg = await simPackage(dir, 64 * 1024);
  t.teardown(() => pkg.server.close());
  const fleet = await startSimFleet({
    count: 4,
    dir,
    urls: [broker.url],
    protocolVersion: 5,
    ota: { trustedKeys: pkg.trustedKeys },
    reconnect: { minMs: 200, maxMs: 2_000 },
  });
  t.teardown(() => fleet.stop());
  // Generous: the boards start beside whatever else the machine runs.
  const online = Date.now() + 120_000;
  while (fleet.online() < fleet.devices.length && Date.now() < online)
    await new Promise((r) => setTimeout(r, 100));
  t.is(fleet.online(), fleet.devices.length, 'every board online');

  const [lost, deaf] = [simDeviceId('sim', 0), simDeviceId('sim', 1)];
  const link = await connectOperator({ url: broker.url });
  t.teardown(() => link.close());
  const bus = lossyBus(link, lost, deaf);
  const db = openStore(join(dir, 'operator.db'));
  t.teardown(() => void db.close());
  const ctl = new RolloutController(db, (deviceId, job) => publishJob(bus, { device: deviceId }, job));
  ctl.create({
    rolloutId: 'r1',
    package: pkg.package,
    targets: pkg.targets,
    baseUrl: pkg.server.baseUrl,
    devices: fleet.devices.map((d) => d.id),
    phases: parsePhases('100%'),
    successThreshold: 1,
    errorThreshold: 0,
  });
  // The re-send comes every second instead of every 30 s; the budget only ends a run that would never end.
  const final = await driveRollout(bus, ctl, 'r1', undefined, {
    tickMs: 50,
    resendUnansweredMs: 1_000,
    signal: AbortSignal.timeout(240_000),
  });

  t.is(final.state, 'completed', final.message);
  t.deepEqual(
    final.devices.map((d) => `${d.deviceId} ${d.state}`),
    fleet.devices.map((d) => `${d.id} succeeded`),
  );
  for (const id of [lost, deaf]) {
    const sent = bus.jobs.get(otaTopics.deviceJobs(id)) ?? [];
    t.true(sent.length >= 2, `${id}: its job went out again (${sent.join(', ')})`);
    t.deepEqual(new Set(sent), new Set([jobIdFor('r1', id)]), `${id}: always under the same job id`);
  }
  for (const d of fleet.devices) {
    t.is(d.activations.get(pkg.package.version), 1, `${d.id} installed ${pkg.package.version} once`);
    t.is(d.active, pkg.package.version);
  }
  t.deepEqual(fleet.doubleInstalls(), []);
});
