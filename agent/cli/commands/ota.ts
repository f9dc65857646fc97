import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { isTerminal, type JobStatus } from '../../../ota/job.js';
import { generateSigningKey } from '../../../ota/keys.js';
import {
  collectStatuses,
  connectOperator,
  driveRollout,
  publishJob,
  watchStatuses,
} from '../../../ota/operator.js';
import { packModel } from '../../../ota/pack.js';
import { parsePhases, RolloutController, type RolloutView } from '../../../ota/rollout.js';
import { rootCommand } from './ota-root.js';
import { parseExpiry, printStatus, readJson, readPrivateKey, required } from './ota-shared.js';

export { parseExpiry } from './ota-shared.js';

import { servePackages } from '../../../ota/serve.js';
import {
  assertTargetsBody,
  emptyTargets,
  type SignedTargets,
  signTargets,
  type TargetsBody,
  upsertArtifact,
} from '../../../ota/targets.js';
import { writeFileDurable } from '../../common/durable-fs.js';
import { MnnEdgeError } from '../../common/errors.js';
import { FleetOperator } from '../../fleet/operator.js';
import { openStore } from '../../store/database.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';

// `mnn-edge ota …`: the operator's side of model OTA. Keys and signing stay on the operator's machine; the
// device only ever sees public keys (config) and signed documents (jobs).

const USAGE = `mnn-edge ota <command> …
  keygen --out DIR [--role root|targets] [--name NAME]
                                                    new ed25519 key (NAME.key, NAME.pub; NAME defaults to the role)
  pack <model dir> [--id ID] [--version X.Y.Z] [--variant V] [--out DIR] [--targets FILE]
                                                    package tarball; with --targets, add it to that document
  sign <targets.json> --key FILE[,FILE…] [--expires 30d|ISO] [--version N | --bump] [--out FILE]
  publish --targets FILE --package ID@VERSION (--device ID | --tag TAG) --broker URL
          (--url BASE | --serve DIR [--bind HOST] [--port P]) [--variant V] [--job-id ID] [--wait SECONDS]
  rollout start --id ROLLOUT --targets FILE --package ID@VERSION (--devices A,B,… | --tag TAG) --broker URL
          (--url BASE | --serve DIR …) [--phases 1,50%,100%] [--success 1] [--errors 0] [--state FILE]
  rollout resume --id ROLLOUT --broker URL [--state FILE] [--serve DIR …]
  status --broker URL [--state FILE] [--json]       every device's last OTA job, and the rollouts
  root sign <root.json> --key FILE[,FILE…] [--root-keys PUB,…] [--root-threshold N] [--targets-keys PUB,…]
          [--targets-threshold N] [--expires 365d|ISO] [--version N | --bump] [--out FILE]
                                                    create, edit or co-sign a root document (PUB: .pub file or key)
  root rotate --root FILE[,FILE…] --broker URL (--device ID | --tag TAG) [--job-id ID] [--wait SECONDS]
                                                    deliver new root(s), oldest first, over the fleet`;

const DEFAULT_STATE = 'ota-operator.db';

function isEnvelope(v: unknown): v is SignedTargets {
  return typeof v === 'object' && v !== null && 'signed' in v && 'signatures' in v;
}

function packageRef(text: string): { id: string; version: string } {
  const at = text.lastIndexOf('@');
  if (at <= 0 || at === text.length - 1) throw new UsageError(`--package expects ID@VERSION, got '${text}'`);
  return { id: text.slice(0, at), version: text.slice(at + 1) };
}

async function keygen(args: ParsedArgs, io: CliIo): Promise<number> {
  const out = required(args, 'out');
  const role = stringFlag(args, 'role');
  if (role !== undefined && role !== 'root' && role !== 'targets')
    throw new UsageError(`--role expects root or targets, got '${role}'`);
  const name = stringFlag(args, 'name') ?? role ?? 'ota-signing';
  const keyPath = join(out, `${name}.key`);
  const pubPath = join(out, `${name}.pub`);
  for (const p of [keyPath, pubPath])
    if (existsSync(p)) throw new MnnEdgeError('EEXIST', `${p} already exists; not overwriting a key`);
  mkdirSync(out, { recursive: true });
  const k = generateSigningKey();
  writeFileDurable(keyPath, k.privateKeyPem, 0o600);
  writeFileDurable(pubPath, `${k.publicKey}\n`);
  const use =
    role === 'root'
      ? `a root key signs root documents: name it with 'ota root sign … --root-keys ${pubPath}'\n`
      : role === 'targets'
        ? `a targets key signs targets documents: name it with 'ota root sign … --targets-keys ${pubPath}'\n`
        : `device configuration (ota.trustedKeys):\n${JSON.stringify({ publicKey: k.publicKey, keyId: k.keyId }, null, 2)}\n`;
  io.stdout.write(
    `private key: ${keyPath} (keep it offline)\npublic key:  ${pubPath}\nkey id:      ${k.keyId}\n\n${use}`,
  );
  return 0;
}

async function pack(args: ParsedArgs, io: CliIo): Promise<number> {
  const dir = args.positionals[1];
  if (dir === undefined) throw new UsageError('missing model directory');
  const outDir = stringFlag(args, 'out') ?? '.';
  mkdirSync(outDir, { recursive: true });
  const id = stringFlag(args, 'id');
  const version = stringFlag(args, 'version');
  const variant = stringFlag(args, 'variant');
  const r = await packModel(dir, {
    outDir,
    ...(id !== undefined ? { id } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(variant !== undefined ? { variant } : {}),
  });
  const targetsPath = stringFlag(args, 'targets');
  if (targetsPath !== undefined) {
    const existing = existsSync(targetsPath) ? readJson(targetsPath, 'targets document') : undefined;
    const body =
      existing === undefined
        ? emptyTargets()
        : ((isEnvelope(existing) ? existing.signed : existing) as TargetsBody);
    const next = upsertArtifact(body, r.manifest.id, r.manifest.version, r.artifact);
    writeFileDurable(targetsPath, `${JSON.stringify(next, null, 2)}\n`);
  }
  io.stdout.write(
    `${JSON.stringify({ package: `${r.manifest.id}@${r.manifest.version}`, tarball: r.tarball, artifact: r.artifact }, null, 2)}\n`,
  );
  return 0;
}

async function sign(args: ParsedArgs, io: CliIo): Promise<number> {
  const file = args.positionals[1];
  if (file === undefined) throw new UsageError('missing targets document');
  const keys = required(args, 'key').split(',').map(readPrivateKey);
  const raw = readJson(file, 'targets document');
  const existing = isEnvelope(raw) ? raw : undefined;
  let body = { ...((existing ? existing.signed : raw) as TargetsBody) };
  const version = stringFlag(args, 'version');
  if (version !== undefined && args.flags['bump']) throw new UsageError('--version and --bump are exclusive');
  if (version !== undefined) {
    if (!/^\d+$/.test(version) || Number(version) < 1)
      throw new UsageError(`--version expects an integer >= 1, got '${version}'`);
    body.version = Number(version);
  } else if (args.flags['bump']) body.version = (body.version ?? 0) + 1;
  const expires = stringFlag(args, 'expires');
  if (expires !== undefined) body.expires = parseExpiry(expires, Date.now());
  body = assertTargetsBody(body);
  const signed = signTargets(body, keys, existing);
  const out = stringFlag(args, 'out') ?? file;
  writeFileDurable(out, `${JSON.stringify(signed, null, 2)}\n`);
  io.stdout.write(
    `signed targets version ${body.version} (expires ${body.expires}) with ${signed.signatures.length} signature(s): ${out}\n`,
  );
  return 0;
}

/** --url, or --serve DIR (a package server that lives as long as the command). */
async function packageSource(
  args: ParsedArgs,
  io: CliIo,
): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const url = stringFlag(args, 'url');
  const serve = stringFlag(args, 'serve');
  if ((url === undefined) === (serve === undefined))
    throw new UsageError('give exactly one of --url and --serve');
  if (url !== undefined) return { baseUrl: url.endsWith('/') ? url : `${url}/`, close: async () => {} };
  const port = Number(stringFlag(args, 'port') ?? '0');
  const srv = await servePackages(resolve(serve!), stringFlag(args, 'bind') ?? '0.0.0.0', port);
  io.stderr.write(`serving ${serve} at ${srv.baseUrl}\n`);
  return srv;
}

function signedTargetsFrom(args: ParsedArgs): SignedTargets {
  const path = required(args, 'targets');
  const doc = readJson(path, 'targets document');
  if (!isEnvelope(doc))
    throw new MnnEdgeError('EINVAL', `${path} is not signed: run 'mnn-edge ota sign ${path} --key …' first`);
  return doc;
}

async function publish(args: ParsedArgs, io: CliIo): Promise<number> {
  const targets = signedTargetsFrom(args);
  const pkg = packageRef(required(args, 'package'));
  const device = stringFlag(args, 'device');
  const tag = stringFlag(args, 'tag');
  if ((device === undefined) === (tag === undefined))
    throw new UsageError('give exactly one of --device and --tag');
  const variant = stringFlag(args, 'variant');
  const source = await packageSource(args, io);
  const client = await connectOperator({ url: required(args, 'broker') });
  try {
    const jobId = stringFlag(args, 'job-id') ?? `${pkg.id}-${pkg.version}-${Date.now().toString(36)}`;
    await publishJob(client, device !== undefined ? { device } : { tag: tag! }, {
      jobId,
      package: { ...pkg, ...(variant !== undefined ? { variant } : {}) },
      targets,
      baseUrl: source.baseUrl,
    });
    io.stdout.write(`job ${jobId} sent to ${device !== undefined ? `device ${device}` : `tag ${tag}`}\n`);
    const wait = Number(stringFlag(args, 'wait') ?? '0');
    if (!(wait >= 0)) throw new UsageError(`--wait expects seconds, got '${stringFlag(args, 'wait')}'`);
    if (wait > 0) {
      // A device job ends with its device's final state; a tag job is watched until --wait runs out.
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, wait * 1000);
        void watchStatuses(client, (s) => {
          if (s.jobId !== jobId) return;
          printStatus(io.stdout, s);
          if (device !== undefined && isTerminal(s.state)) {
            clearTimeout(timer);
            resolveWait();
          }
        });
      });
    }
    return 0;
  } finally {
    await client.endAsync();
    await source.close();
  }
}

function printRollout(out: Writable, v: RolloutView): void {
  const counts = new Map<string, number>();
  for (const d of v.devices) counts.set(d.state, (counts.get(d.state) ?? 0) + 1);
  out.write(
    `rollout ${v.rolloutId} ${v.spec.package.id}@${v.spec.package.version}: ${v.state}, phase ${v.phase + 1}/${v.spec.phases.length}` +
      ` [${[...counts].map(([s, n]) => `${s} ${n}`).join(', ')}]${v.message ? ` — ${v.message}` : ''}\n`,
  );
}

/** The devices a rollout covers: listed, or every device whose retained status carries the tag (fixed at start,
 *  so the rollout's phases and thresholds refer to one known set). */
export async function rolloutDevices(args: ParsedArgs, broker: string): Promise<string[]> {
  const listed = stringFlag(args, 'devices');
  const tag = stringFlag(args, 'tag');
  if ((listed === undefined) === (tag === undefined))
    throw new UsageError('give exactly one of --devices and --tag');
  if (listed !== undefined)
    return listed
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean);
  const operator = await FleetOperator.connect({ url: broker });
  try {
    const devices = (await operator.listDevices(1_500))
      .filter((d) => d.status?.tags?.includes(tag!))
      .map((d) => d.deviceId);
    if (devices.length === 0)
      throw new MnnEdgeError('ENOENT', `No device with tag ${tag} has announced itself on ${broker}`);
    return devices;
  } finally {
    await operator.close();
  }
}

async function rollout(args: ParsedArgs, io: CliIo): Promise<number> {
  const sub = args.positionals[1];
  const id = required(args, 'id');
  const db = openStore(stringFlag(args, 'state') ?? DEFAULT_STATE);
  let source: { baseUrl: string; close: () => Promise<void> } | undefined;
  try {
    const client = await connectOperator({ url: required(args, 'broker') });
    const controller = new RolloutController(db, async (deviceId, job) =>
      publishJob(client, { device: deviceId }, job),
    );
    try {
      if (sub === 'start') {
        source = await packageSource(args, io);
        controller.create({
          rolloutId: id,
          package: packageRef(required(args, 'package')),
          targets: signedTargetsFrom(args),
          baseUrl: source.baseUrl,
          devices: await rolloutDevices(args, required(args, 'broker')),
          phases: parsePhases(stringFlag(args, 'phases') ?? '100%'),
          successThreshold: Number(stringFlag(args, 'success') ?? '1'),
          errorThreshold: Number(stringFlag(args, 'errors') ?? '0'),
        });
      } else if (sub === 'resume') {
        if (!controller.get(id))
          throw new MnnEdgeError(
            'ENOENT',
            `No rollout ${id} in ${stringFlag(args, 'state') ?? DEFAULT_STATE}`,
          );
        if (stringFlag(args, 'serve') !== undefined) source = await packageSource(args, io);
      } else {
        throw new UsageError(`unknown rollout command '${sub ?? ''}' (start or resume)`);
      }
      const final = await driveRollout(client, controller, id, (v) => printRollout(io.stdout, v));
      return final.state === 'completed' ? 0 : 1;
    } finally {
      await client.endAsync();
    }
  } finally {
    await source?.close();
    db.close();
  }
}

async function status(args: ParsedArgs, io: CliIo): Promise<number> {
  const client = await connectOperator({ url: required(args, 'broker') });
  let statuses: Map<string, JobStatus>;
  try {
    statuses = await collectStatuses(client);
  } finally {
    await client.endAsync();
  }
  const statePath = stringFlag(args, 'state') ?? DEFAULT_STATE;
  let rollouts: RolloutView[] = [];
  if (existsSync(statePath)) {
    const db = openStore(statePath);
    try {
      rollouts = new RolloutController(db, async () => {}).list();
    } finally {
      db.close();
    }
  }
  if (args.flags['json']) {
    io.stdout.write(`${JSON.stringify({ devices: [...statuses.values()], rollouts }, null, 2)}\n`);
    return 0;
  }
  if (statuses.size === 0) io.stdout.write('no device has reported an OTA job\n');
  for (const s of [...statuses.values()].sort((a, b) => (a.deviceId < b.deviceId ? -1 : 1)))
    printStatus(io.stdout, s);
  for (const r of rollouts) printRollout(io.stdout, r);
  return 0;
}

export const command: Command = {
  name: 'ota',
  summary: 'sign, pack, publish and roll out model packages (operator tools)',
  usage: USAGE,
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: [
        'out',
        'name',
        'id',
        'version',
        'variant',
        'targets',
        'key',
        'expires',
        'package',
        'device',
        'tag',
        'broker',
        'url',
        'serve',
        'bind',
        'port',
        'job-id',
        'wait',
        'devices',
        'phases',
        'success',
        'errors',
        'state',
        'role',
        'root',
        'root-keys',
        'root-threshold',
        'targets-keys',
        'targets-threshold',
      ],
      booleans: ['bump', 'json'],
    });
    switch (args.positionals[0]) {
      case 'keygen':
        return keygen(args, io);
      case 'pack':
        return pack(args, io);
      case 'sign':
        return sign(args, io);
      case 'publish':
        return publish(args, io);
      case 'rollout':
        return rollout(args, io);
      case 'status':
        return status(args, io);
      case 'root':
        return rootCommand(args, io);
      case undefined:
        throw new UsageError('missing command');
      default:
        throw new UsageError(`unknown command '${args.positionals[0]}'`);
    }
  },
};
