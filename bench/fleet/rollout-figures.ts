// bench/fleet's rollouts, each run by the operator's CLI in its own process (bench/fleet/controller-runs.ts):
// one paced only by the package server (wall time against the bandwidth bound, the controller's peak RSS), a
// reference rollout in many phases, and the same rollout again under each fault the broker allows: the
// controller killed -9 at random points and resumed, the broker restarted, a cluster node killed. Every faulted
// rollout is compared with the reference device by device, and with what the boards themselves ran.
import { join } from 'node:path';
import { Downloader } from '../../lib/download/downloader.js';
import { bar, check, fmt } from '../lib/stats.js';
import {
  boardProblems,
  type CliRollout,
  type ControllerRun,
  finalShare,
  readRollout,
  rolloutDifferences,
  rolloutWithKills,
  runController,
  startArgv,
  whereKilled,
} from './controller-runs.js';
import type { SimFleet } from './sim-fleet.js';
import type { SimPackage } from './sim-rollout.js';

export interface RolloutBench {
  name: string;
  fleet: SimFleet;
  pkg: SimPackage;
  targetsFile: string;
  dir: string;
  /** The CLI's --broker (a cluster's nodes comma-separated). */
  broker: string;
  /** Progress and result lines. */
  log: (line: string) => void;
}

const FAULT_PHASES = '1%,5%,10%,20%,30%,40%,50%,60%,70%,80%,90%,100%';
const mb = (b: number) => b / 1024 / 1024;

function rollout(b: RolloutBench, n: number, phases: string): CliRollout {
  return {
    rolloutId: `bench-${b.name}-${n}`,
    package: b.pkg.packages[n]!,
    devices: b.fleet.devices.map((d) => d.id),
    broker: b.broker,
    baseUrl: b.pkg.server.baseUrl,
    targetsFile: b.targetsFile,
    stateFile: join(b.dir, `${b.name}-operator.db`),
    flags: ['--phases', phases, '--success', '0.9', '--errors', '0.05', '--job-timeout', '15m'],
  };
}

/** Downloads of the package, `parallel` at once: the server's aggregate rate, bytes per second. */
async function serverRate(b: RolloutBench, parallel: number): Promise<number> {
  const artifact = b.pkg.targets.signed.packages[0]!.artifacts[0]!;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, (_, i) =>
      new Downloader({ headroomBytes: 0 }).fetch({
        url: `${b.pkg.server.baseUrl}${artifact.name}`,
        dest: join(b.dir, `${b.name}-probe-${i}.tar`),
        length: b.pkg.bytes,
        sha256: artifact.sha256,
      }),
    ),
  );
  return (parallel * b.pkg.bytes) / ((performance.now() - t0) / 1000);
}

function progress(b: RolloutBench, r: CliRollout): () => void {
  const timer = setInterval(() => {
    let v: ReturnType<typeof readRollout>;
    try {
      v = readRollout(r.stateFile, r.rolloutId);
    } catch {
      return; // busy with the controller's write: the next line will do
    }
    if (!v) return;
    const done = v.devices.filter((d) => d.state === 'succeeded').length;
    b.log(bar(`  ${r.rolloutId}`, done, v.devices.length, `${done}/${v.devices.length} ${v.state}`));
  }, 5_000);
  return () => clearInterval(timer);
}

async function timed(b: RolloutBench, r: CliRollout): Promise<{ run: ControllerRun; s: number }> {
  const stop = progress(b, r);
  const t0 = performance.now();
  try {
    const run = await runController(startArgv(r));
    if (run.code !== 0 && run.code !== 1) throw new Error(`controller exited ${run.code}: ${run.stderr}`);
    return { run, s: (performance.now() - t0) / 1000 };
  } finally {
    stop();
  }
}

/** The rollout paced only by the package server: its wall time against the bound, and the controller's RSS. */
export async function bandwidthRollout(b: RolloutBench): Promise<void> {
  const n = b.fleet.devices.length;
  const one = await serverRate(b, 1);
  const many = await serverRate(b, 50);
  const r = rollout(b, 0, '10%,100%');
  const { run, s } = await timed(b, r);
  const v = readRollout(r.stateFile, r.rolloutId)!;
  b.log(
    `  rollout ${r.rolloutId}: ${v.state} (${v.message}); server ${fmt(mb(many), 1)} MB/s with 50 at once`,
  );
  check(`${b.name}: rollout wall time (phases 10%,100%)`, s, 's', 'report', v.state === 'completed');
  check(
    `${b.name}: bandwidth bound, N × size ÷ server rate (50 at once)`,
    (n * b.pkg.bytes) / many,
    's',
    'report',
    true,
  );
  check(
    `${b.name}: N sequential downloads at one download's rate`,
    (n * b.pkg.bytes) / one,
    's',
    'report',
    true,
  );
  check(
    `${b.name}: controller peak RSS (ota rollout process)`,
    mb(run.peakRss),
    'MB',
    '<= 150',
    mb(run.peakRss) <= 150,
  );
  check(
    `${b.name}: double installs`,
    b.fleet.doubleInstalls().length,
    '',
    '0',
    b.fleet.doubleInstalls().length === 0,
  );
}

export type Compare = (label: string, r: CliRollout) => void;

/**
 * Reference rollout in many phases; returns its wall time (faults are timed within it) and a checker for a
 * faulted rollout of the same devices.
 */
export async function referenceRollout(b: RolloutBench): Promise<{ seconds: number; compare: Compare }> {
  const r = rollout(b, 1, FAULT_PHASES);
  const { s } = await timed(b, r);
  const reference = readRollout(r.stateFile, r.rolloutId)!;
  b.log(`  reference ${r.rolloutId}: ${reference.state} (${reference.message}) in ${fmt(s, 1)} s`);
  const problems = boardProblems(b.fleet, reference, r.package.version);
  check(`${b.name}: reference rollout wall time (12 phases)`, s, 's', 'report', problems.length === 0);
  const compare: Compare = (label, faulted) => {
    const v = readRollout(faulted.stateFile, faulted.rolloutId)!;
    const diffs = rolloutDifferences(reference, v);
    const boards = boardProblems(b.fleet, v, faulted.package.version);
    for (const line of [...diffs, ...boards].slice(0, 20)) b.log(`    ${line}`);
    const twice = boards.filter((p) => p.includes(' times')).length;
    const skipped = boards.filter((p) => p.includes('skipped')).length;
    check(`${b.name}: ${label}: devices installed twice`, twice, '', '0', twice === 0);
    check(`${b.name}: ${label}: devices skipped`, skipped, '', '0', skipped === 0);
    check(
      `${b.name}: ${label}: devices ending unlike the reference`,
      diffs.length,
      '',
      '0',
      diffs.length === 0,
    );
  };
  return { seconds: s, compare };
}

/** The controller killed -9 `kills` times at random points; resumed after each. */
export async function killedRollout(
  b: RolloutBench,
  compare: Compare,
  kills: number,
  random: () => number,
): Promise<void> {
  const r = rollout(b, 2, FAULT_PHASES);
  const stop = progress(b, r);
  const t0 = performance.now();
  try {
    const k = await rolloutWithKills(r, {
      kills,
      random,
      startupMs: 3_000,
      jitterMs: 500,
      onKill: (where) => b.log(`  kill -9: ${where}`),
    });
    b.log(
      `  ${k.kills.length} kills, ${k.runs} controller runs, ${fmt((performance.now() - t0) / 1000, 1)} s`,
    );
    check(
      `${b.name}: controller kills landed mid-rollout`,
      k.kills.length,
      '',
      `${kills}`,
      k.kills.length === kills,
    );
  } finally {
    stop();
  }
  compare(`${kills} controller kills`, r);
}

/** One rollout with `fault` done to the broker once `share` of its devices have finished. */
export async function faultedRollout(
  b: RolloutBench,
  compare: Compare,
  n: number,
  label: string,
  share: number,
  fault: () => Promise<void>,
): Promise<void> {
  const r = rollout(b, n, FAULT_PHASES);
  const stop = progress(b, r);
  let running = true;
  const faulted = (async () => {
    while (running && finalShare(r) < share) await new Promise((res) => setTimeout(res, 200));
    if (!running) return;
    b.log(`  ${label} at ${whereKilled(readRollout(r.stateFile, r.rolloutId))}`);
    await fault();
  })();
  try {
    const run = await runController(startArgv(r));
    running = false;
    await faulted;
    b.log(`  controller: exit ${run.code}; ${run.stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`);
  } finally {
    running = false;
    stop();
  }
  compare(label, r);
}
