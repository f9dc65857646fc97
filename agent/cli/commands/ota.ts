import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isTerminal, type JobStatus } from '../../../ota/jobs/job.js';
import { packModel } from '../../../ota/tools/pack.js';
import { collectStatuses, connectOperator, publishJob, watchStatuses } from '../../../ota/tools/publish.js';
import { RolloutController, type RolloutSpec, type RolloutView } from '../../../ota/tools/rollout.js';
import { generateSigningKey } from '../../../ota/trust/keys.js';
import {
  DEFAULT_STATE,
  openRolloutState,
  pacingFromFlags,
  printRolloutReport,
  ROLLOUT_FLAGS,
  rolloutCommand,
} from './ota-rollout.js';
import { rootCommand } from './ota-root.js';

export { rolloutDevices } from './ota-rollout.js';

import {
  operatorBroker,
  parseExpiry,
  printStatus,
  readJson,
  readPrivateKey,
  required,
} from './ota-shared.js';

export { parseExpiry } from './ota-shared.js';

import { writeFileDurable } from '../../../lib/durable-fs.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { servePackages } from '../../../ota/tools/serve.js';
import {
  assertTargetsBody,
  emptyTargets,
  type SignedTargets,
  signTargets,
  type TargetsBody,
  upsertArtifact,
} from '../../../ota/trust/targets.js';
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
  publish --targets FILE --package ID@VERSION (--device ID | --tag TAG) --broker URL[,URL…]
          (--url BASE | --serve DIR [--bind HOST] [--port P]) [--variant V] [--job-id ID] [--wait SECONDS]
  rollout start --id ROLLOUT --targets FILE --package ID@VERSION (--devices A,B,… | --tag TAG [--follow [--until 2h|ISO]])
          --broker URL[,URL…] (--url BASE | --serve DIR …) [--phases 1,50%,100%] [--success 1] [--errors 0]
          [--abort TYPE:PCT%,… [--abort-min N]] [--job-timeout 10m] [--retries N [--retry-backoff 30s]]
          [--max-per-minute N | --ramp START,FACTOR [--max-per-minute CAP]] [--state FILE]
                                                    TYPE: failed, rejected, rolled-back, timed-out, any
  rollout resume --id ROLLOUT --broker URL [--state FILE] [--serve DIR …]
  rollout stop --id ROLLOUT --broker URL [--state FILE]    ends a rollout (and closes a --follow one)
  status --broker URL [--state FILE] [--json] [--devices-too]
                                                    the rollouts per phase with reasons, and devices' last jobs
common: --username U --password P (or MNN_EDGE_MQTT_USERNAME/PASSWORD); --broker takes a cluster's nodes a,b,c;
        --mqtt-version 4|5 (default 5, and 3.1.1 where a broker refuses 5, as NATS does)
  root sign <root.json> --key FILE[,FILE…] [--root-keys PUB,…] [--root-threshold N] [--targets-keys PUB,…]
          [--targets-threshold N] [--expires 365d|ISO] [--version N | --bump] [--out FILE]
                                                    create, edit or co-sign a root document (PUB: .pub file or key)
  root rotate --root FILE[,FILE…] --broker URL (--device ID | --tag TAG) [--job-id ID] [--wait SECONDS]
                                                    deliver new root(s), oldest first, over the fleet`;

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
  const client = await connectOperator(operatorBroker(args, io));
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
    await client.close();
    await source.close();
  }
}

/** `ota rollout start`'s spec from the flags: package, targets, phases and pacing, and a followed tag. */
function rolloutSpec(args: ParsedArgs): Omit<RolloutSpec, 'devices' | 'baseUrl'> {
  const tag = stringFlag(args, 'tag');
  const until = stringFlag(args, 'until');
  if (args.flags['follow'] && tag === undefined) throw new UsageError('--follow needs --tag');
  if (until !== undefined && !args.flags['follow']) throw new UsageError('--until needs --follow');
  return {
    rolloutId: required(args, 'id'),
    package: packageRef(required(args, 'package')),
    targets: signedTargetsFrom(args),
    ...pacingFromFlags(args),
    ...(args.flags['follow']
      ? {
          follow: {
            tag: tag!,
            ...(until !== undefined ? { untilMs: Date.parse(parseExpiry(until, Date.now())) } : {}),
          },
        }
      : {}),
  };
}

async function status(args: ParsedArgs, io: CliIo): Promise<number> {
  const client = await connectOperator(operatorBroker(args, io));
  let statuses: Map<string, JobStatus>;
  try {
    statuses = await collectStatuses(client);
  } finally {
    await client.close();
  }
  const statePath = stringFlag(args, 'state') ?? DEFAULT_STATE;
  let rollouts: RolloutView[] = [];
  if (existsSync(statePath)) {
    const db = openRolloutState(statePath);
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
  const quiet = rollouts.length > 0 && !args.flags['devices-too'];
  if (statuses.size === 0) io.stdout.write('no device has reported an OTA job\n');
  else if (!quiet || statuses.size <= 50)
    for (const s of [...statuses.values()].sort((a, b) => (a.deviceId < b.deviceId ? -1 : 1)))
      printStatus(io.stdout, s);
  else io.stdout.write(`${statuses.size} devices have reported an OTA job (--json lists them)\n`);
  for (const r of rollouts) printRolloutReport(io.stdout, r);
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
        ...ROLLOUT_FLAGS,
        'username',
        'password',
        'mqtt-version',
        'role',
        'root',
        'root-keys',
        'root-threshold',
        'targets-keys',
        'targets-threshold',
      ],
      booleans: ['bump', 'json', 'follow', 'devices-too'],
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
        return rolloutCommand(
          args,
          io,
          () => packageSource(args, io),
          async () => ({ ...rolloutSpec(args), baseUrl: '' }),
        );
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
