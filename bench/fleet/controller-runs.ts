// The rollout controller as an operator runs it: `mnn-edge ota rollout start`, then `resume` after whatever
// ended it, here a SIGKILL at a random moment. Used by the kill tests (test/integration/rollout-faults.test.ts)
// and bench/fleet at N = 1,000. The controller runs in its own process so that a kill loses exactly what a
// crash loses: whatever it held in memory, and nothing in its SQLite state file.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../agent/store/database.js';
import { RolloutController, type RolloutView } from '../../ota/tools/rollout.js';
import { isFinal } from '../../ota/tools/rollout-policy.js';
import type { SimFleet } from './sim-fleet.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(repoRoot, 'agent', 'cli', 'mnn-edge.ts');

export interface CliRollout {
  rolloutId: string;
  package: { id: string; version: string };
  devices: readonly string[];
  /** One broker or a cluster's nodes, comma-separated (the CLI's --broker). */
  broker: string;
  baseUrl: string;
  targetsFile: string;
  stateFile: string;
  /** Phases, thresholds, timeouts: passed to `rollout start` as they are. */
  flags: readonly string[];
}

export interface ControllerRun {
  killed: boolean;
  /** The most resident memory the process was seen with (sampled every 250 ms from /proc), in bytes. */
  peakRss: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface KillPlan {
  /** SIGKILL this long after the process started (it may not have created the rollout yet). */
  afterSpawnMs?: number;
  /** SIGKILL this long after its first progress line (the first jobs are out). */
  afterProgressMs?: number;
  /** SIGKILL once this holds (polled every 200 ms), after up to `jitterMs` more. */
  when?: () => boolean;
  jitterMs?: number;
  /** Called at its first progress line (to fault something else, such as the broker, mid-rollout). */
  onProgress?: () => void;
}

/** Runs the CLI once; resolves when it exits or was killed as planned. */
export function runController(argv: readonly string[], kill: KillPlan = {}): Promise<ControllerRun> {
  return new Promise((resolvePromise, reject) => {
    // The operator's machine has no agent data; a directory of its own keeps the CLI off the real one.
    const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-controller-'));
    const child = spawn(process.execPath, ['--import=tsx', CLI, ...argv], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MNN_EDGE_DATA_DIR: dataDir },
    });
    let stdout = '';
    let stderr = '';
    let peakRss = 0;
    const sample = () => {
      try {
        const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        peakRss = Math.max(peakRss, Number(kb ?? 0) * 1024);
      } catch {
        // Gone already, or no /proc: the figure stays what was seen.
      }
    };
    const sampler = setInterval(sample, 250);
    const watcher = setInterval(() => {
      if (!kill.when?.()) return;
      clearInterval(watcher);
      killAfter(Math.floor(Math.random() * (kill.jitterMs ?? 0)));
    }, 200);
    const timers: NodeJS.Timeout[] = [];
    const killAfter = (ms: number) => timers.push(setTimeout(() => child.kill('SIGKILL'), ms));
    if (kill.afterSpawnMs !== undefined) killAfter(kill.afterSpawnMs);
    child.stdout.on('data', (d: Buffer) => {
      const first = stdout === '';
      stdout += d.toString();
      if (first && kill.afterProgressMs !== undefined) killAfter(kill.afterProgressMs);
      if (first) kill.onProgress?.();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      // Moving between nodes, refusals: what an operator would watch on the terminal.
      if (process.env['FLEET_CONTROLLER_STDERR'] === '1')
        process.stderr.write(`  [controller] ${d.toString()}`);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(sampler);
      clearInterval(watcher);
      for (const t of timers) clearTimeout(t);
      rmSync(dataDir, { recursive: true, force: true });
      resolvePromise({ killed: signal === 'SIGKILL', peakRss, code, stdout, stderr });
    });
  });
}

export function startArgv(r: CliRollout): string[] {
  return [
    'ota',
    'rollout',
    'start',
    '--id',
    r.rolloutId,
    '--targets',
    r.targetsFile,
    '--package',
    `${r.package.id}@${r.package.version}`,
    '--devices',
    r.devices.join(','),
    '--broker',
    r.broker,
    '--url',
    r.baseUrl,
    '--state',
    r.stateFile,
    ...r.flags,
  ];
}

export function resumeArgv(r: CliRollout): string[] {
  return ['ota', 'rollout', 'resume', '--id', r.rolloutId, '--broker', r.broker, '--state', r.stateFile];
}

/** The rollout as its state file holds it now (undefined before `start` created it). */
export function readRollout(stateFile: string, rolloutId: string): RolloutView | undefined {
  if (!existsSync(stateFile)) return undefined;
  const db = openStore(stateFile);
  try {
    return new RolloutController(db, async () => {}).get(rolloutId);
  } finally {
    db.close();
  }
}

/** Where a kill landed: before the rollout existed, or its phase and how many devices had a job / were done. */
export function whereKilled(view: RolloutView | undefined): string {
  if (!view) return 'before the rollout was created';
  const sent = view.devices.filter((d) => d.state !== 'pending').length;
  const done = view.devices.filter((d) => isFinal(d.state)).length;
  return `phase ${view.phase + 1}, ${sent} jobs out, ${done} final of ${view.devices.length}`;
}

export interface KilledRollout {
  final: RolloutView;
  kills: string[];
  runs: number;
  last: ControllerRun;
}

/** The share of the rollout's devices in a final state (0 before it exists, or while its file is busy). */
export function finalShare(r: CliRollout): number {
  try {
    const v = readRollout(r.stateFile, r.rolloutId);
    return v ? v.devices.filter((d) => isFinal(d.state)).length / Math.max(1, v.devices.length) : 0;
  } catch {
    return 0;
  }
}

/**
 * Starts the rollout and kills its controller `kills` times at random points, resuming it after each (or
 * starting it again when the kill came before the rollout existed), then lets the last run finish.
 * One kill in four comes within `startupMs` of the spawn (start-up, creating, resending); the others once a
 * random share of the devices (drawn in advance, growing, below 70 %) has finished, plus up to `jitterMs`.
 * Kills by progress land mid-rollout however fast the machine is: a rollout only moves on while a
 * controller runs, so the next kill's share is reached before the rollout can end.
 */
export async function rolloutWithKills(
  r: CliRollout,
  o: {
    kills: number;
    random: () => number;
    startupMs?: number;
    jitterMs?: number;
    onKill?: (where: string) => void;
  },
): Promise<KilledRollout> {
  const kills: string[] = [];
  const shares = Array.from({ length: o.kills }, () => 0.02 + 0.68 * o.random()).sort((a, b) => a - b);
  let runs = 0;
  for (;;) {
    const exists = readRollout(r.stateFile, r.rolloutId) !== undefined;
    const argv = exists ? resumeArgv(r) : startArgv(r);
    const share = shares[kills.length];
    const plan: KillPlan =
      share === undefined
        ? {}
        : o.random() < 0.25
          ? { afterSpawnMs: Math.floor(o.random() * (o.startupMs ?? 3_000)) }
          : { when: () => finalShare(r) >= share, jitterMs: o.jitterMs ?? 500 };
    const run = await runController(argv, plan);
    runs++;
    if (run.killed) {
      const where = whereKilled(readRollout(r.stateFile, r.rolloutId));
      kills.push(where);
      o.onKill?.(where);
      continue;
    }
    const final = readRollout(r.stateFile, r.rolloutId);
    if (!final || final.state === 'running')
      throw new Error(
        `controller exited with ${run.code} and the rollout is ${final?.state ?? 'absent'}: ${run.stderr.slice(-2_000)}`,
      );
    return { final, kills, runs, last: run };
  }
}

/** Per device (by position in the rollout): its final state and the kind of its reason. */
function outcome(v: RolloutView): string[] {
  return [...v.devices]
    .sort((a, b) => a.ordinal - b.ordinal)
    .map(
      (d) => `${d.deviceId}: ${d.state}${d.reason ? ` (${d.reason.split(':')[0]})` : ''} phase ${d.phase}`,
    );
}

/** What differs between two rollouts over the same devices: empty when they ended the same way. */
export function rolloutDifferences(reference: RolloutView, other: RolloutView): string[] {
  const diffs: string[] = [];
  if (reference.state !== other.state) diffs.push(`rollout state ${reference.state} vs ${other.state}`);
  if (reference.phase !== other.phase) diffs.push(`rollout phase ${reference.phase} vs ${other.phase}`);
  if (reference.message !== other.message) diffs.push(`message "${reference.message}" vs "${other.message}"`);
  const a = outcome(reference);
  const b = outcome(other);
  if (a.length !== b.length) diffs.push(`${a.length} devices vs ${b.length}`);
  for (let i = 0; i < Math.min(a.length, b.length); i++)
    if (a[i] !== b[i]) diffs.push(`${a[i]}  vs  ${b[i]}`);
  return diffs;
}

/**
 * What the boards themselves say about a rollout of `version`: a board that installed it more than once, a
 * board the rollout counts as succeeded that does not run it, a board that never got to a final state.
 */
export function boardProblems(fleet: SimFleet, view: RolloutView, version: string): string[] {
  const problems: string[] = [];
  for (const d of view.devices) {
    const board = fleet.byId(d.deviceId);
    if (!board) {
      problems.push(`${d.deviceId}: not a simulated board`);
      continue;
    }
    const n = board.activations.get(version) ?? 0;
    if (n > 1) problems.push(`${d.deviceId}: installed ${version} ${n} times`);
    if (!isFinal(d.state)) problems.push(`${d.deviceId}: skipped (still ${d.state})`);
    if (d.state === 'succeeded' && (board.active !== version || n !== 1))
      problems.push(`${d.deviceId}: succeeded but runs ${board.active} after ${n} activations of ${version}`);
  }
  return problems;
}
