import { hostname, userInfo } from 'node:os';
import { MnnEdgeError } from '../../../lib/errors.js';
import { readJsonFile } from '../../../lib/json-input.js';
import { isValidDeviceId } from '../../../lib/topics.js';
import { parseConfig } from '../../config/load.js';
import { isPlainObject, type JsonObject, leaves } from '../../config/sources.js';
import type { CommandResponse, DocumentMessage, FleetSelector } from '../../fleet/protocol.js';
import { configDrift, type DriftRow, patchFromSets, shownValue } from '../../operator/fleet/config-edit.js';
import { table } from '../../operator/fleet/format.js';
import { FleetOperator } from '../../operator/fleet/operator.js';
import { addressed } from '../../operator/fleet/query.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo } from '../common/command.js';
import { CONFIG_FLAGS } from './config.js';
import { CONNECTION_FLAGS, operatorOptions, positiveInt } from './fleet-options.js';

// `mnn-edge fleet config`: read the effective configuration of one device or a selection (the devices'
// `get-config`; a device that does not answer is named, and its retained `config` document shown for what it
// last said), change it (`set-config`: one merge patch from --set pairs, each device answering with the same
// messages as its dashboard), or list the devices whose configuration differs from a reference file.

export const FLEET_CONFIG_USAGE = `  fleet config (<device> | --tag T | --board FAMILY | --all) [--set key=value …] [--expect-revision N] [--operator NAME]
  fleet config (<device> | --tag T | --board FAMILY | --all) --diff FILE
                 values parse as JSON when they can (30, true, ["a"], null hands a key back to the file), else text
                 [--timeout MS] [--json]`;

interface Target {
  deviceId?: string;
  selector: FleetSelector;
}

/** `--set` may be given many times; the argument parser keeps one value per flag, so they are taken out first. */
export function takeSets(argv: readonly string[]): { sets: string[]; rest: string[] } {
  const sets: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (a === '--set') {
      const v = argv[++i];
      if (v === undefined) throw new UsageError('--set needs key=value');
      sets.push(v);
    } else if (a.startsWith('--set=')) sets.push(a.slice('--set='.length));
    else rest.push(a);
  }
  return { sets, rest };
}

function targetOf(args: ParsedArgs): Target {
  const tag = stringFlag(args, 'tag');
  const board = stringFlag(args, 'board');
  const selector: FleetSelector = {};
  if (tag !== undefined) selector.tags = [tag];
  if (board !== undefined) selector.boardFamilies = [board];
  const fleetWide = tag !== undefined || board !== undefined || args.flags['all'] === true;
  const [deviceId, extra] = args.positionals;
  if (fleetWide && deviceId !== undefined)
    throw new UsageError(`name a device or use --tag, --board or --all, not both ('${deviceId}')`);
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  if (!fleetWide && deviceId === undefined)
    throw new UsageError('name a device, or use --tag, --board or --all');
  if (deviceId !== undefined && !isValidDeviceId(deviceId))
    throw new UsageError(`invalid device id "${deviceId}"`);
  return deviceId !== undefined ? { deviceId, selector: { deviceIds: [deviceId] } } : { selector };
}

interface Gathered {
  responses: CommandResponse[];
  /** Addressed (online by their retained status, or named) and silent until the deadline. */
  silent: string[];
  /** The retained `config` documents, for what a silent device said last. */
  retained: Map<string, DocumentMessage>;
}

async function ask(
  op: FleetOperator,
  target: Target,
  name: string,
  params: Record<string, unknown>,
  timeoutMs: number,
): Promise<Gathered> {
  const devices = await op.listDevices(300);
  const retained = new Map<string, DocumentMessage>();
  for (const d of devices) if (d.documents.config) retained.set(d.deviceId, d.documents.config);
  let responses: CommandResponse[] = [];
  let expected: string[];
  if (target.deviceId !== undefined) {
    expected = [target.deviceId];
    try {
      responses = await op.command({ deviceId: target.deviceId }, name, params, timeoutMs);
    } catch (err) {
      if (!(err instanceof MnnEdgeError) || err.code !== 'ETIMEOUT') throw err;
    }
  } else {
    expected = addressed(devices, target.selector);
    const want = new Set(expected);
    responses = await op.command({ selector: target.selector }, name, params, timeoutMs, undefined, (rs) =>
      [...want].every((d) => rs.some((r) => r.deviceId === d)),
    );
  }
  const answered = new Set(responses.map((r) => r.deviceId));
  responses.sort((a, b) => a.deviceId.localeCompare(b.deviceId));
  return { responses, silent: expected.filter((d) => !answered.has(d)), retained };
}

function ago(ts: number): string {
  const s = Math.max(0, Math.round((Date.now() - ts) / 1000));
  return s < 120
    ? `${s} s ago`
    : s < 7200
      ? `${Math.round(s / 60)} min ago`
      : `${Math.round(s / 3600)} h ago`;
}

function silentLine(g: Gathered, timeoutMs: number): string {
  return `${g.silent.length} addressed device${g.silent.length === 1 ? '' : 's'} did not answer within ${timeoutMs} ms: ${g.silent.join(', ')}\n`;
}

// --- set ---------------------------------------------------------------------------------------------------

interface SetResult {
  revision: number;
  changes: Array<{ key: string; old?: unknown; new?: unknown }>;
  restartRequired?: string[];
  note?: string;
}

export function setLine(r: CommandResponse): string {
  if (!r.ok) {
    const code = r.error?.code;
    const message = r.error?.message ?? 'no message';
    if (code === 'ECONFLICT') return `${r.deviceId}: conflict (409): ${message}`;
    if (code === 'EPARAMS' || code === 'EREFUSED') return `${r.deviceId}: refused: ${message}`;
    return `${r.deviceId}: error ${code}: ${message}`;
  }
  const res = r.result as SetResult;
  if (res.changes.length === 0) return `${r.deviceId}: unchanged, already so at revision ${res.revision}`;
  // A key the configuration does not hold runs on its section's built-in default.
  const changes = res.changes.map(
    (c) => `${c.key} ${shownValue(c.old, c.key, '(default)')} -> ${shownValue(c.new, c.key, '(default)')}`,
  );
  const restart = res.restartRequired?.length
    ? `; takes effect after a restart: ${res.restartRequired.join(', ')}`
    : '';
  return `${r.deviceId}: applied, revision ${res.revision}: ${changes.join(', ')}${restart}`;
}

async function setConfig(op: FleetOperator, target: Target, args: ParsedArgs, patch: JsonObject, io: CliIo) {
  const expect = stringFlag(args, 'expect-revision');
  if (expect !== undefined && !/^\d+$/.test(expect))
    throw new UsageError(`--expect-revision expects a revision number, got "${expect}"`);
  const operator = stringFlag(args, 'operator') ?? `${userInfo().username}@${hostname()}`;
  const timeoutMs = positiveInt(args, 'timeout', 30_000);
  const g = await ask(
    op,
    target,
    'set-config',
    {
      patch,
      operator: operator.slice(0, 128),
      ...(expect !== undefined ? { expectRevision: Number(expect) } : {}),
    },
    timeoutMs,
  );
  if (args.flags['json'])
    io.stdout.write(
      `${JSON.stringify({ responses: g.responses, noAnswer: g.silent, deadlineMs: timeoutMs }, null, 2)}\n`,
    );
  else {
    const lines = [
      ...g.responses.map(setLine),
      ...g.silent.map((d) => `${d}: no answer within ${timeoutMs} ms (not changed, or not known to be)`),
    ];
    io.stdout.write(lines.length > 0 ? `${lines.join('\n')}\n` : 'no device is addressed by this selector\n');
  }
  if (g.silent.length > 0) io.stderr.write(silentLine(g, timeoutMs));
  return g.responses.length > 0 && g.silent.length === 0 && g.responses.every((r) => r.ok) ? 0 : 1;
}

// --- read and drift ----------------------------------------------------------------------------------------

interface ConfigDoc {
  revision?: number;
  effective?: unknown;
  sources?: Record<string, string>;
  problem?: string;
}

/** Each device's configuration document: its answer, else its retained document (marked as such). */
function documents(g: Gathered): Array<{ deviceId: string; doc: ConfigDoc; from: string }> {
  const out: Array<{ deviceId: string; doc: ConfigDoc; from: string }> = [];
  for (const r of g.responses)
    if (r.ok && isPlainObject(r.result))
      out.push({ deviceId: r.deviceId, doc: r.result as ConfigDoc, from: '' });
  for (const d of g.silent) {
    const kept = g.retained.get(d);
    if (kept)
      out.push({
        deviceId: d,
        doc: kept.data as ConfigDoc,
        from: ` (did not answer: its retained config document of ${ago(kept.ts)})`,
      });
  }
  return out;
}

function failures(g: Gathered): string[] {
  return g.responses
    .filter((r) => !r.ok)
    .map((r) => `${r.deviceId}: error ${r.error?.code}: ${r.error?.message}`);
}

function readReference(path: string): JsonObject {
  const raw = readJsonFile(path, 'reference configuration');
  parseConfig(raw, path); // the file's own schema and messages: a typo in the reference is not "drift"
  return raw as JsonObject;
}

function driftBlock(
  deviceId: string,
  rows: readonly DriftRow[],
  revision: string,
  from: string,
  file: string,
) {
  if (rows.length === 0) return `${deviceId}: matches ${file}${revision}${from}\n`;
  const head = `${deviceId}: ${rows.length} key${rows.length === 1 ? ' differs' : 's differ'} from ${file}${revision}${from}\n`;
  const body = table(
    ['  KEY', 'DEVICE', 'REFERENCE'],
    rows.map((r) => [`  ${r.key}`, shownValue(r.device, r.key), shownValue(r.reference, r.key)]),
  );
  return head + body;
}

async function readConfig(op: FleetOperator, target: Target, args: ParsedArgs, io: CliIo): Promise<number> {
  const diffFile = stringFlag(args, 'diff');
  const reference = diffFile !== undefined ? readReference(diffFile) : undefined;
  const timeoutMs = positiveInt(args, 'timeout', target.deviceId !== undefined ? 10_000 : 3_000);
  const g = await ask(op, target, 'get-config', {}, timeoutMs);
  const docs = documents(g);
  const rev = (d: ConfigDoc) => (d.revision !== undefined ? ` (revision ${d.revision})` : '');
  let drifted = 0;
  const results = docs.map(({ deviceId, doc, from }) => {
    const drift = reference ? configDrift(reference, doc.effective) : [];
    if (drift.length > 0) drifted++;
    return { deviceId, doc, from, drift };
  });
  if (args.flags['json']) {
    const out = results.map((r) => ({
      deviceId: r.deviceId,
      revision: r.doc.revision,
      answered: r.from === '',
      ...(reference ? { drift: r.drift } : { config: r.doc }),
    }));
    io.stdout.write(
      `${JSON.stringify({ devices: out, noAnswer: g.silent, errors: failures(g) }, null, 2)}\n`,
    );
  } else if (reference) {
    for (const r of results) io.stdout.write(driftBlock(r.deviceId, r.drift, rev(r.doc), r.from, diffFile!));
    io.stdout.write(
      `${results.length} device${results.length === 1 ? '' : 's'} compared with ${diffFile}: ${drifted} differ, ${results.length - drifted} match\n`,
    );
  } else {
    for (const { deviceId, doc, from } of results) {
      io.stdout.write(`${deviceId}${rev(doc)}${from}${doc.problem ? `: ${doc.problem}` : ''}\n`);
      const rows = leaves(doc.effective).map(([k, v]) => [
        `  ${k}`,
        shownValue(v, k),
        doc.sources?.[k] ?? 'default',
      ]);
      io.stdout.write(table(['  KEY', 'VALUE', 'SOURCE'], rows));
    }
  }
  for (const line of failures(g)) io.stderr.write(`${line}\n`);
  if (g.silent.length > 0) io.stderr.write(silentLine(g, timeoutMs));
  if (results.length === 0 && g.silent.length === 0 && failures(g).length === 0)
    io.stderr.write('no device is addressed by this selector\n');
  const complete = g.silent.length === 0 && failures(g).length === 0 && results.length > 0;
  return complete && drifted === 0 ? 0 : 1;
}

export async function fleetConfig(argv: readonly string[], io: CliIo): Promise<number> {
  const { sets, rest } = takeSets(argv);
  const args = parseArgs(rest, {
    values: [
      ...CONFIG_FLAGS,
      ...CONNECTION_FLAGS,
      'tag',
      'board',
      'timeout',
      'expect-revision',
      'diff',
      'operator',
    ],
    booleans: ['all', 'json'],
  });
  const target = targetOf(args);
  const diff = stringFlag(args, 'diff');
  if (sets.length > 0 && diff !== undefined)
    throw new UsageError('--set and --diff do not go together: change, or compare');
  if (sets.length === 0 && stringFlag(args, 'expect-revision') !== undefined)
    throw new UsageError('--expect-revision guards a change: give it with --set');
  if (sets.length === 0 && stringFlag(args, 'operator') !== undefined)
    throw new UsageError('--operator names who makes a change: give it with --set');
  // Everything that can be refused here is, before a connection is made.
  const patch = sets.length > 0 ? patchFromSets(sets) : undefined;
  if (diff !== undefined) readReference(diff);
  const op = await FleetOperator.connect({
    ...operatorOptions(args, io.env),
    onNotice: (line) => io.stderr.write(`${line}\n`),
  });
  try {
    return patch ? await setConfig(op, target, args, patch, io) : await readConfig(op, target, args, io);
  } finally {
    await op.close();
  }
}
