// `mnn-edge ota root …`: the root-of-trust ceremony on the operator's side. `sign` creates a root document,
// edits it (keys, thresholds, expiry, version) or adds a co-signature; `rotate` delivers one or more new roots
// to devices over the broker and, with --wait, reports how each device took them.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { writeFileDurable } from '../../../lib/durable-fs.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { isTerminal, type JobStatus } from '../../../ota/jobs/job.js';
import { connectOperator, publishRootRotation, watchStatuses } from '../../../ota/tools/publish.js';
import { type PublicKeyInfo, parsePublicKey } from '../../../ota/trust/keys.js';
import {
  assertRootBody,
  ROOT_SPEC_VERSION,
  ROOT_TYPE,
  type RootBody,
  type SignedRoot,
  signRoot,
} from '../../../ota/trust/root.js';
import { type ParsedArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo } from '../common/command.js';
import {
  operatorBroker,
  parseExpiry,
  printStatus,
  readJson,
  readPrivateKey,
  required,
} from './ota-shared.js';

function isRootEnvelope(v: unknown): v is SignedRoot {
  return typeof v === 'object' && v !== null && Object.hasOwn(v, 'signed') && Object.hasOwn(v, 'signatures');
}

/** A public key given as a .pub file (what keygen writes) or pasted as base64. */
function publicKeyArg(text: string): PublicKeyInfo {
  const t = text.trim();
  if (!existsSync(t)) return parsePublicKey(t);
  // .pub files are one line of base64; anything larger is not a key.
  if (statSync(t).size > 16 * 1024) throw new MnnEdgeError('EKEY', `${t} is too large to be a public key`);
  return parsePublicKey(readFileSync(t, 'utf8'));
}

function keyList(args: ParsedArgs, flag: string): PublicKeyInfo[] | undefined {
  const v = stringFlag(args, flag);
  if (v === undefined) return undefined;
  const keys = v
    .split(',')
    .filter((p) => p.trim() !== '')
    .map(publicKeyArg);
  if (keys.length === 0) throw new UsageError(`--${flag} expects at least one key`);
  return keys;
}

function integerFlag(args: ParsedArgs, flag: string): number | undefined {
  const v = stringFlag(args, flag);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < 1)
    throw new UsageError(`--${flag} expects an integer >= 1, got '${v}'`);
  return Number(v);
}

/** Replaces one role's keys (and threshold), keeping the key list free of keys no role names any more. */
function withRole(
  body: RootBody,
  role: 'root' | 'targets',
  keys: PublicKeyInfo[] | undefined,
  threshold: number | undefined,
): RootBody {
  if (keys === undefined && threshold === undefined) return body;
  const current = body.roles[role];
  const keyids = keys ? [...new Set(keys.map((k) => k.keyId))] : current.keyids;
  const roles = {
    ...body.roles,
    [role]: {
      keyids,
      threshold: threshold ?? (keys ? Math.min(current.threshold, keyids.length) : current.threshold),
    },
  };
  const known = new Map(body.keys.map((k) => [k.keyid, k]));
  for (const k of keys ?? []) known.set(k.keyId, { keyid: k.keyId, publicKey: k.publicKey });
  const used = new Set([...roles.root.keyids, ...roles.targets.keyids]);
  return { ...body, roles, keys: [...known.values()].filter((k) => used.has(k.keyid)) };
}

async function sign(args: ParsedArgs, io: CliIo): Promise<number> {
  const file = args.positionals[2];
  if (file === undefined) throw new UsageError('missing root document');
  const signers = required(args, 'key').split(',').map(readPrivateKey);
  const rootKeys = keyList(args, 'root-keys');
  const targetsKeys = keyList(args, 'targets-keys');
  const rootThreshold = integerFlag(args, 'root-threshold');
  const targetsThreshold = integerFlag(args, 'targets-threshold');
  let existing: SignedRoot | undefined;
  let body: RootBody;
  if (existsSync(file)) {
    const raw = readJson(file, 'root document');
    existing = isRootEnvelope(raw) ? raw : undefined;
    body = assertRootBody(existing ? existing.signed : raw, `root document ${file}`);
  } else {
    if (rootKeys === undefined || targetsKeys === undefined)
      throw new UsageError(`${file} does not exist: a new root needs --root-keys and --targets-keys`);
    body = {
      _type: ROOT_TYPE,
      specVersion: ROOT_SPEC_VERSION,
      version: 1,
      expires: parseExpiry(stringFlag(args, 'expires') ?? '365d', Date.now()),
      keys: [],
      roles: { root: { keyids: [], threshold: 1 }, targets: { keyids: [], threshold: 1 } },
    };
  }
  body = withRole(body, 'root', rootKeys, rootThreshold);
  body = withRole(body, 'targets', targetsKeys, targetsThreshold);
  const version = stringFlag(args, 'version');
  if (version !== undefined && args.flags['bump']) throw new UsageError('--version and --bump are exclusive');
  if (version !== undefined) {
    if (!/^\d+$/.test(version) || Number(version) < 1)
      throw new UsageError(`--version expects an integer >= 1, got '${version}'`);
    body = { ...body, version: Number(version) };
  } else if (args.flags['bump']) body = { ...body, version: body.version + 1 };
  const expires = stringFlag(args, 'expires');
  if (expires !== undefined) body = { ...body, expires: parseExpiry(expires, Date.now()) };
  const signed = signRoot(body, signers, existing);
  const out = stringFlag(args, 'out') ?? file;
  writeFileDurable(out, `${JSON.stringify(signed, null, 2)}\n`);
  const own = signed.signatures.filter((s) => body.roles.root.keyids.includes(s.keyid)).length;
  io.stdout.write(
    `signed root version ${body.version} (expires ${body.expires}): ${own} of ${body.roles.root.threshold} required signature(s) by its root keys, ${signed.signatures.length} in all; targets keys ${body.roles.targets.keyids.map((k) => k.slice(0, 12)).join(', ')} (threshold ${body.roles.targets.threshold}): ${out}\n` +
      (own < body.roles.root.threshold
        ? 'not yet valid: more holders of its root keys must sign it\n'
        : body.version > 1
          ? `devices accept it only if a threshold of root version ${body.version - 1}'s root keys signed it too\n`
          : ''),
  );
  return 0;
}

async function rotate(args: ParsedArgs, io: CliIo): Promise<number> {
  const roots = required(args, 'root')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const doc = readJson(p, 'root document');
      if (!isRootEnvelope(doc))
        throw new MnnEdgeError(
          'EINVAL',
          `${p} is not a signed root: run 'mnn-edge ota root sign ${p} --key …' first`,
        );
      return doc;
    });
  const versions = roots.map((r) => assertRootBody(r.signed, 'root document').version);
  for (let i = 1; i < versions.length; i++)
    if (versions[i] !== versions[i - 1]! + 1)
      throw new UsageError(
        `--root lists versions ${versions.join(', ')}: give consecutive versions, oldest first`,
      );
  const device = stringFlag(args, 'device');
  const tag = stringFlag(args, 'tag');
  if ((device === undefined) === (tag === undefined))
    throw new UsageError('give exactly one of --device and --tag');
  const wait = Number(stringFlag(args, 'wait') ?? '0');
  if (!(wait >= 0)) throw new UsageError(`--wait expects seconds, got '${stringFlag(args, 'wait')}'`);
  const jobId = stringFlag(args, 'job-id') ?? `root-${versions.at(-1)}-${Date.now().toString(36)}`;
  const client = await connectOperator(operatorBroker(args, io));
  try {
    let final: JobStatus | undefined;
    const done =
      wait > 0
        ? new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, wait * 1000);
            void watchStatuses(client, (s) => {
              if (s.jobId !== jobId) return;
              printStatus(io.stdout, s);
              final = s;
              if (device !== undefined && isTerminal(s.state)) {
                clearTimeout(timer);
                resolve();
              }
            });
          })
        : Promise.resolve();
    await publishRootRotation(client, device !== undefined ? { device } : { tag: tag! }, { jobId, roots });
    io.stdout.write(
      `root rotation ${jobId} (root version ${versions.join(', ')}) sent to ${device !== undefined ? `device ${device}` : `tag ${tag}`}\n`,
    );
    await done;
    if (device !== undefined && wait > 0)
      return (final as JobStatus | undefined)?.state === 'succeeded' ? 0 : 1;
    return 0;
  } finally {
    await client.close();
  }
}

export async function rootCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  switch (args.positionals[1]) {
    case 'sign':
      return sign(args, io);
    case 'rotate':
      return rotate(args, io);
    default:
      throw new UsageError(`unknown root command '${args.positionals[1] ?? ''}' (sign or rotate)`);
  }
}
