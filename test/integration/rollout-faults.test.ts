import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  boardProblems,
  type CliRollout,
  readRollout,
  rolloutDifferences,
  rolloutWithKills,
  runController,
  startArgv,
  whereKilled,
} from '../../bench/fleet/controller-runs.js';
import { simDeviceId, startSimFleet } from '../../bench/fleet/sim-fleet.js';
import { simPackages } from '../../bench/fleet/sim-rollout.js';
import { otaDefaults } from '../../ota/config.js';
import { MOSQUITTO_BIN, mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// The rollout controller under faults, at small N (bench/fleet does N = 1,000 with 10 kills): simulated boards
// (the real fleet agent and OTA runner each) on a real mosquitto, the controller as the operator runs it
// (`mnn-edge ota rollout start`, then `resume`) in its own process. One rollout without faults is the
// reference; then the same rollout of the next version with the controller killed -9 at random points, and
// the next with the broker restarted in the middle. Each must end exactly as the reference did, device by
// device, with no board installing twice and none left out.

const N = 24;
const KILLS = 3;
const skipped = mosquittoAvailable() ? undefined : `mosquitto not found at ${MOSQUITTO_BIN}`;
if (skipped) console.log(`rollout-faults: skipped, ${skipped}`);
const gate = skipped ? test.skip : test.serial;

/** Seeded, so a failing run can be repeated (the seed is logged). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

gate(
  `${N} boards: controller killed -9 ${KILLS} times, then the broker restarted, each mid-rollout: the same end as without faults`,
  async (t) => {
    t.timeout(600_000);
    const seed = Number(process.env['MNN_EDGE_TEST_SEED'] ?? Date.now() % 1_000_000);
    t.log(`seed ${seed} (MNN_EDGE_TEST_SEED repeats it)`);
    const random = mulberry32(seed);
    const dir = mkdtempSync(join(tmpdir(), 'rollout-faults-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const broker = await startMosquitto({ persistence: true });
    t.teardown(() => broker.close());
    const pkg = await simPackages(dir, 64 * 1024, ['2.0.0', '3.0.0', '4.0.0']);
    t.teardown(() => pkg.server.close());
    const targetsFile = join(dir, 'targets.json');
    writeFileSync(targetsFile, JSON.stringify(pkg.targets));
    // One board of phase 2 fails the health gate (and rolls back) in every rollout; a capped download rate
    // makes each phase take seconds, so kills land while jobs run.
    const unhealthy = simDeviceId('sim', 9);
    const fleet = await startSimFleet({
      count: N,
      dir,
      urls: [broker.url],
      protocolVersion: 5,
      ota: {
        trustedKeys: pkg.trustedKeys,
        download: { ...otaDefaults.download, maxBytesPerSecond: 32 * 1024 },
      },
      health: (id) => (id === unhealthy ? 'fail' : 'pass'),
      telemetryIntervalMs: 5_000,
      reconnect: { minMs: 200, maxMs: 2_000 },
    });
    t.teardown(() => fleet.stop());
    const deadline = Date.now() + 60_000;
    while (fleet.online() < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.is(fleet.online(), N, 'every board online');

    const rollout = (n: number): CliRollout => ({
      rolloutId: `r${n}`,
      package: pkg.packages[n]!,
      devices: fleet.devices.map((d) => d.id),
      broker: broker.url,
      baseUrl: pkg.server.baseUrl,
      targetsFile,
      stateFile: join(dir, 'operator.db'),
      flags: ['--phases', '4,8,12,16,20,100%', '--success', '0.5', '--errors', '0.2', '--job-timeout', '3m'],
    });

    // The reference: no faults.
    const ref = rollout(0);
    const plain = await runController(startArgv(ref));
    t.is(plain.code, 0, plain.stderr);
    const reference = readRollout(ref.stateFile, ref.rolloutId)!;
    t.is(reference.state, 'completed', reference.message);
    t.is(reference.message, `${N - 1} of ${N} devices updated`);
    t.deepEqual(boardProblems(fleet, reference, ref.package.version), []);

    // The controller killed at random points and resumed after each kill.
    const killed = rollout(1);
    const k = await rolloutWithKills(killed, {
      kills: KILLS,
      random,
      startupMs: 3_000,
      onKill: (where) => t.log(`kill: ${where}`),
    });
    t.is(k.kills.length, KILLS, `kills: ${k.kills.join('; ')}`);
    t.deepEqual(rolloutDifferences(reference, k.final), [], 'ends as the reference did');
    t.deepEqual(boardProblems(fleet, k.final, killed.package.version), [], 'no double install, none skipped');

    // The broker restarted (SIGTERM, then started on its port with its persistence) mid-rollout.
    const restarted = rollout(2);
    let restart: Promise<void> | undefined;
    const run = await runController(startArgv(restarted), {
      onProgress: () => {
        restart = (async () => {
          await new Promise((r) => setTimeout(r, 500 + random() * 3_000));
          await broker.stop();
          t.log(`broker stopped at ${whereKilled(readRollout(restarted.stateFile, restarted.rolloutId))}`);
          await new Promise((r) => setTimeout(r, 1_000));
          await broker.start();
        })();
      },
    });
    await restart;
    t.is(run.code, 0, run.stderr);
    t.regex(run.stderr, /continuing on/, 'the controller saw the broker go and come back');
    const after = readRollout(restarted.stateFile, restarted.rolloutId)!;
    t.deepEqual(rolloutDifferences(reference, after), [], 'ends as the reference did');
    t.deepEqual(
      boardProblems(fleet, after, restarted.package.version),
      [],
      'no double install, none skipped',
    );
    t.deepEqual(fleet.doubleInstalls(), []);
  },
);
