// `mnn-edge ota rollout start|resume|stop` and the rollout part of `ota status`: the controller's state file,
// the devices a rollout covers (listed, or by tag, fixed or followed), pacing and abort flags, and the per-phase
// report an operator reads to see what happened and why it stopped.
import { existsSync } from 'node:fs';
import type { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { MnnEdgeError } from '../../../lib/errors.js';
import {
  connectOperator,
  driveRollout,
  type OperatorBroker,
  publishJob,
} from '../../../ota/tools/publish.js';
import {
  type PhaseSpec,
  parsePhases,
  RolloutController,
  type RolloutView,
} from '../../../ota/tools/rollout.js';
import {
  type AbortCriterion,
  FAILED_STATES,
  isFinal,
  parseAbortCriteria,
  parseDuration,
  parseRamp,
  type RateLimit,
} from '../../../ota/tools/rollout-policy.js';
import { FleetOperator } from '../../operator/fleet/operator.js';
import { type Db, openStore } from '../../store/database.js';
import { allMigrations } from '../../store/migrations.js';
import { type ParsedArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo } from '../common/command.js';
import { operatorBroker, required } from './ota-shared.js';

export const DEFAULT_STATE = 'ota-operator.db';

export const ROLLOUT_FLAGS = [
  'devices',
  'phases',
  'success',
  'errors',
  'state',
  'job-timeout',
  'retries',
  'retry-backoff',
  'max-per-minute',
  'ramp',
  'abort',
  'abort-min',
  'until',
] as const;

/**
 * The controller's state file, refused when a newer mnn-edge wrote it: its schema could mean something this
 * version would misread, and a rollout is the last place to guess.
 */
export function openRolloutState(path: string): Db {
  if (existsSync(path)) {
    let newest = 0;
    try {
      const raw = new Database(path, { readonly: true, fileMustExist: true });
      try {
        newest =
          (raw.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null }).v ??
          0;
      } finally {
        raw.close();
      }
    } catch {
      // Not one of ours yet (or empty): openStore says what is wrong with it.
    }
    const known = Math.max(...allMigrations.map((m) => m.version));
    if (newest > known)
      throw new MnnEdgeError(
        'EVERSION',
        `${path} was written by a newer mnn-edge (state schema version ${newest}; this one knows up to ${known}); use that version or a newer one`,
      );
  }
  return openStore(path);
}

/** The devices a rollout covers: listed, or every device whose retained status carries the tag. */
export async function rolloutDevices(args: ParsedArgs, broker: OperatorBroker): Promise<string[]> {
  const listed = stringFlag(args, 'devices');
  const tag = stringFlag(args, 'tag');
  if ((listed === undefined) === (tag === undefined))
    throw new UsageError('give exactly one of --devices and --tag');
  if (listed !== undefined)
    return listed
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean);
  const operator = await FleetOperator.connect(broker);
  try {
    const devices = (await operator.listDevices(1_500))
      .filter((d) => d.status?.tags?.includes(tag!))
      .map((d) => d.deviceId);
    if (devices.length === 0 && !args.flags['follow'])
      throw new MnnEdgeError('ENOENT', `No device with tag ${tag} has announced itself on ${operator.url}`);
    return devices;
  } finally {
    await operator.close();
  }
}

/** Listed ids no device has ever announced on the broker (retained status): named, and left out. */
async function unknownDevices(ids: readonly string[], broker: OperatorBroker): Promise<string[]> {
  const operator = await FleetOperator.connect(broker);
  try {
    const known = new Set((await operator.listDevices(1_000)).map((d) => d.deviceId));
    return ids.filter((id) => !known.has(id));
  } finally {
    await operator.close();
  }
}

function number(args: ParsedArgs, flag: string, fallback: number, min: number): number {
  const raw = stringFlag(args, flag);
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min)
    throw new UsageError(`--${flag} expects a number >= ${min}, got '${raw}'`);
  return v;
}

export interface PacingFlags {
  phases: PhaseSpec[];
  successThreshold: number;
  errorThreshold: number;
  abort?: AbortCriterion[];
  jobTimeoutMs?: number;
  retries?: number;
  retryBackoffMs?: number;
  rate?: RateLimit;
}

export function pacingFromFlags(args: ParsedArgs): PacingFlags {
  const perMinute = stringFlag(args, 'max-per-minute');
  const ramp = stringFlag(args, 'ramp');
  const rate: RateLimit | undefined = ramp
    ? { ...parseRamp(ramp), ...(perMinute ? { maxPerMinute: number(args, 'max-per-minute', 0, 1) } : {}) }
    : perMinute
      ? { perMinute: number(args, 'max-per-minute', 0, 1) }
      : undefined;
  const abort = stringFlag(args, 'abort');
  const timeout = stringFlag(args, 'job-timeout');
  const backoff = stringFlag(args, 'retry-backoff');
  return {
    phases: parsePhases(stringFlag(args, 'phases') ?? '100%'),
    successThreshold: number(args, 'success', 1, 0),
    errorThreshold: number(args, 'errors', 0, 0),
    ...(abort ? { abort: parseAbortCriteria(abort, number(args, 'abort-min', 1, 1)) } : {}),
    ...(timeout ? { jobTimeoutMs: parseDuration(timeout, 'job-timeout') } : {}),
    ...(stringFlag(args, 'retries') !== undefined ? { retries: number(args, 'retries', 0, 0) } : {}),
    ...(backoff ? { retryBackoffMs: parseDuration(backoff, 'retry-backoff') } : {}),
    ...(rate ? { rate } : {}),
  };
}

const CATEGORIES = ['pending', 'running', 'succeeded', 'failed', 'timed out'] as const;

function category(state: string): (typeof CATEGORIES)[number] {
  if (state === 'pending' || state === 'sent') return 'pending';
  if (state === 'succeeded') return 'succeeded';
  if (state === 'timed-out') return 'timed out';
  if ((FAILED_STATES as readonly string[]).includes(state)) return 'failed';
  return 'running'; // queued … health-check, and retrying
}

/** One line per rollout, for progress. */
export function rolloutLine(v: RolloutView): string {
  const counts = new Map<string, number>();
  for (const d of v.devices) counts.set(category(d.state), (counts.get(category(d.state)) ?? 0) + 1);
  return (
    `rollout ${v.rolloutId} ${v.spec.package.id}@${v.spec.package.version}: ${v.state}, phase ${v.phase + 1}/${v.spec.phases.length}` +
    ` [${CATEGORIES.filter((c) => counts.has(c))
      .map((c) => `${c} ${counts.get(c)}`)
      .join(', ')}]${v.message ? ` — ${v.message}` : ''}\n`
  );
}

/** `ota status`: per phase the five counts, each failed device with its reason, and the abort decision. */
export function printRolloutReport(out: Writable, v: RolloutView, maxListed = 20): void {
  out.write(rolloutLine(v));
  const phases = [...new Set(v.devices.map((d) => d.phase))].sort((a, b) => (a ?? 1e9) - (b ?? 1e9));
  for (const p of phases) {
    const ds = v.devices.filter((d) => d.phase === p);
    const counts = CATEGORIES.map((c) => `${c} ${ds.filter((d) => category(d.state) === c).length}`);
    out.write(`  ${p === undefined ? 'not started' : `phase ${p + 1}`}: ${counts.join(', ')}\n`);
    const bad = ds.filter((d) => isFinal(d.state) && d.state !== 'succeeded');
    for (const d of bad.slice(0, maxListed)) out.write(`    ${d.deviceId}  ${d.state}: ${d.reason ?? '-'}\n`);
    if (bad.length > maxListed) out.write(`    … and ${bad.length - maxListed} more (--json lists all)\n`);
  }
  if (v.decision) {
    const n = v.decision;
    out.write(
      `  abort decision: ${n.count} ${n.type} of ${n.started} started = ${((100 * n.count) / n.started).toFixed(1)} % > threshold ${(100 * n.threshold).toFixed(1)} % (judged from ${n.minStarted} started)\n`,
    );
  }
  const ig = v.spec.ignored;
  if (ig?.duplicate.length) out.write(`  listed twice (sent once): ${ig.duplicate.join(', ')}\n`);
  if (ig?.unknown.length) out.write(`  unknown to the broker (left out): ${ig.unknown.join(', ')}\n`);
}

/** Progress without flooding: a line when the counts change, at most one a second, and the last one always. */
function throttledPrinter(out: Writable): (v: RolloutView) => void {
  let last = '';
  let at = 0;
  return (v) => {
    const line = rolloutLine(v);
    if (line === last || (v.state === 'running' && Date.now() - at < 1_000)) return;
    last = line;
    at = Date.now();
    out.write(line);
  };
}

export async function rolloutCommand(
  args: ParsedArgs,
  io: CliIo,
  packageSource: () => Promise<{ baseUrl: string; close: () => Promise<void> }>,
  start: (broker: OperatorBroker) => Promise<Omit<Parameters<RolloutController['create']>[0], 'devices'>>,
): Promise<number> {
  const sub = args.positionals[1];
  const id = required(args, 'id');
  const statePath = stringFlag(args, 'state') ?? DEFAULT_STATE;
  const db = openRolloutState(statePath);
  let source: { baseUrl: string; close: () => Promise<void> } | undefined;
  try {
    const broker = operatorBroker(args, io);
    if (sub === 'stop') {
      const c = new RolloutController(db, async () => {});
      if (!c.get(id)) throw new MnnEdgeError('ENOENT', `No rollout ${id} in ${statePath}`);
      c.stop(id, 'stopped by the operator');
      io.stdout.write(rolloutLine(c.get(id)!));
      return 0;
    }
    const client = await connectOperator(broker);
    const controller = new RolloutController(db, (deviceId, job) =>
      publishJob(client, { device: deviceId }, job),
    );
    try {
      if (sub === 'start') {
        source = await packageSource();
        const listed = await rolloutDevices(args, broker);
        const unknown = stringFlag(args, 'devices') !== undefined ? await unknownDevices(listed, broker) : [];
        for (const u of unknown)
          io.stderr.write(`unknown device ${u}: it never announced itself; left out\n`);
        const dup = listed.filter((d, i) => listed.indexOf(d) !== i);
        for (const d of new Set(dup)) io.stderr.write(`device ${d} is listed twice; it gets one job\n`);
        const spec = await start(broker);
        controller.create({
          ...spec,
          baseUrl: source.baseUrl,
          devices: listed.filter((d) => !unknown.includes(d)),
          ignored: { duplicate: [...new Set(dup)], unknown },
        });
      } else if (sub === 'resume') {
        if (!controller.get(id)) throw new MnnEdgeError('ENOENT', `No rollout ${id} in ${statePath}`);
        if (stringFlag(args, 'serve') !== undefined) source = await packageSource();
      } else {
        throw new UsageError(`unknown rollout command '${sub ?? ''}' (start, resume or stop)`);
      }
      const final = await driveRollout(client, controller, id, throttledPrinter(io.stdout));
      return final.state === 'completed' ? 0 : 1;
    } finally {
      await client.close();
    }
  } finally {
    await source?.close();
    db.close();
  }
}
