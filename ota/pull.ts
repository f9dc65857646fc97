// First boot: `mnn-edge models pull <url>` installs a package without a fleet, through the same downloader
// and verification as OTA jobs. Trust comes from a signed targets document (by default targets.json beside
// the package; its signatures must verify against ota.trustedKeys, and it updates the anti-rollback state
// like any other) or, for one install, from a sha256 the person typed. There is no third way.

import { mkdirSync, rmSync } from 'node:fs';
import { arch as hostArch } from 'node:os';
import { basename, join } from 'node:path';
import { configFromFlags } from '../agent/cli/commands/config.js';
import { parseArgs, stringFlag, UsageError } from '../agent/cli/common/args.js';
import type { CliIo } from '../agent/cli/common/command.js';
import { systemClock } from '../agent/common/clock.js';
import { MnnEdgeError } from '../agent/common/errors.js';
import { INPUT_LIMITS } from '../agent/common/input-limits.js';
import { parseJsonInput, readJsonFile } from '../agent/common/json-input.js';
import { resolveOtaConfig } from '../agent/config/sections/ota.js';
import { KvStore, openStore } from '../agent/store/database.js';
import { timesyncdProbe } from '../agent/time/sync-probe.js';
import { createTrustedTime } from '../agent/time/trusted-time.js';
import { modelsConfigOf, storeLimitsOf } from '../models/config.js';
import { formatRef, type ModelRef, ModelStore } from '../models/index.js';
import { rootStoreFor, stagingDirOf } from './device.js';
import { Downloader, fetchBytes, probeLength } from './download.js';
import { OtaRejection } from './rejection.js';
import { defaultRetrievalPolicy, type RetrievalPolicy } from './retrieval-guard.js';
import { ModelStoreInstaller } from './store-adapter.js';
import { type DeviceFacts, selectTarget } from './targets.js';
import { TrustStore } from './trust.js';

export interface PullRequest {
  url: string;
  /** Where the signed targets document is: a URL or a file path; default targets.json beside the package. */
  targets?: string;
  /** One-off trust: the package's sha256, typed by a person who got it from a trusted channel. */
  sha256?: string;
}

export interface PullDeps {
  trust: TrustStore;
  downloader: Downloader;
  /** Returns what it installed; without an expectation (sha256 trust) the package's manifest names it. */
  installer: {
    install(tarball: string, expect: ModelRef | undefined, signal?: AbortSignal): Promise<ModelRef>;
  };
  stagingDir: string;
  facts: DeviceFacts;
  readTargets: (where: string) => Promise<unknown>;
}

export interface PullResult {
  ref: ModelRef;
  trustedBy: 'signature' | 'sha256';
  bytes: number;
}

export async function pullPackage(
  req: PullRequest,
  deps: PullDeps,
  signal?: AbortSignal,
): Promise<PullResult> {
  const name = basename(new URL(req.url).pathname);
  let expect: { length: number; sha256: string; ref: ModelRef | undefined };
  let trustedBy: PullResult['trustedBy'];
  if (req.sha256 !== undefined) {
    if (!/^[0-9a-f]{64}$/.test(req.sha256)) {
      throw new MnnEdgeError(
        'EUSAGE',
        `--sha256 expects 64 lowercase hex digits, got ${JSON.stringify(req.sha256)}`,
      );
    }
    // The length is the server's word; the hash the person gave is what makes the file trusted.
    expect = { length: await probeLength(req.url), sha256: req.sha256, ref: undefined };
    trustedBy = 'sha256';
  } else {
    if (deps.trust.policy.keys.length === 0) {
      throw new MnnEdgeError(
        'ENOTRUST',
        'No trusted key is configured (ota.rootFile or ota.trustedKeys): add the fleet root or signing key, or pass --sha256 of the package to install it once',
      );
    }
    const where = req.targets ?? new URL('targets.json', req.url).toString();
    const verified = deps.trust.accept(await deps.readTargets(where));
    const pkg = verified.body.packages.find((p) => p.artifacts.some((a) => a.name === name));
    if (!pkg) throw new MnnEdgeError('ENOTARGET', `${name} is not listed in the signed targets (${where})`);
    const sel = selectTarget(
      verified.body,
      pkg.id,
      pkg.version,
      deps.facts,
      pkg.artifacts.find((a) => a.name === name)!.variant,
    );
    if (typeof sel === 'string') throw new MnnEdgeError('ENOTARGET', sel);
    expect = {
      length: sel.artifact.length,
      sha256: sel.artifact.sha256,
      ref: { id: pkg.id, version: pkg.version },
    };
    trustedBy = 'signature';
  }
  mkdirSync(deps.stagingDir, { recursive: true });
  const dest = join(deps.stagingDir, `${expect.sha256}.tar`);
  try {
    await deps.downloader.fetch(
      { url: req.url, dest, length: expect.length, sha256: expect.sha256 },
      { extraBytes: expect.length, ...(signal ? { signal } : {}) },
    );
    const installed = await deps.installer.install(dest, expect.ref, signal);
    return { ref: installed, trustedBy, bytes: expect.length };
  } finally {
    rmSync(dest, { force: true });
  }
}

/** The targets document from a URL or a file, bounded like every metadata read (size, depth, rate). */
export async function readTargetsFrom(
  where: string,
  policy: RetrievalPolicy = defaultRetrievalPolicy,
): Promise<unknown> {
  const limits = { maxBytes: INPUT_LIMITS.metadataMaxBytes };
  const what = `Targets document ${where}`;
  try {
    if (/^https?:\/\//.test(where))
      return parseJsonInput(await fetchBytes(where, limits.maxBytes, policy), what, limits);
    return readJsonFile(where, 'targets document', limits);
  } catch (err) {
    if (err instanceof MnnEdgeError && ['ETOOLARGE', 'EPAYLOAD', 'ETOODEEP', 'EBADJSON'].includes(err.code))
      throw new OtaRejection(err.code === 'ETOOLARGE' ? 'too-large' : 'malformed', err.message, {
        code: err.code,
      });
    throw err;
  }
}

export const MODELS_PULL_USAGE =
  'mnn-edge models pull <url> [--targets URL|FILE] [--sha256 HEX] [--config FILE] [--data-dir DIR]';

/** The `models pull` subcommand: argv is what follows `pull`. */
export async function runModelsPull(argv: string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv, { values: ['targets', 'sha256', 'config', 'data-dir', 'root'] });
  const [url, ...rest] = args.positionals;
  if (url === undefined) throw new UsageError('missing package URL');
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
  if (!/^https?:\/\//.test(url)) throw new UsageError(`expected an http(s) URL, got '${url}'`);
  const { config } = configFromFlags(args, io.env);
  const ota = resolveOtaConfig(config['ota']);
  const db = openStore(join(config.dataDir, 'agent.db'));
  let closeStore = () => {};
  try {
    const kv = new KvStore(db);
    const time = createTrustedTime({ kv, clock: systemClock, probe: timesyncdProbe(config.root) });
    // The store's configured limits apply to pulled packages exactly as to imported ones.
    const { store } = ModelStore.open({
      dataDir: config.dataDir,
      db,
      limits: storeLimitsOf(modelsConfigOf(config['models'])),
    });
    closeStore = () => store.close();
    const installer = new ModelStoreInstaller(store, { headroomBytes: ota.download.headroomBytes });
    const downloader = new Downloader(ota.download);
    let last = 0;
    downloader.on('progress', (p) => {
      if (p.done - last < p.total / 20 && p.done !== p.total) return;
      last = p.done;
      io.stderr.write(`downloading ${Math.floor((p.done / p.total) * 100)}% (${p.done}/${p.total} bytes)\n`);
    });
    const result = await pullPackage(
      {
        url,
        ...(stringFlag(args, 'targets') !== undefined ? { targets: stringFlag(args, 'targets')! } : {}),
        ...(stringFlag(args, 'sha256') !== undefined ? { sha256: stringFlag(args, 'sha256')! } : {}),
      },
      {
        trust: new TrustStore(db, rootStoreFor(db, ota, time), time),
        downloader,
        installer: {
          async install(tarball, expect, signal) {
            if (expect) {
              await installer.install(tarball, expect, signal);
              return expect;
            }
            const pkg = await store.import(tarball, {
              manifestFirst: true,
              headroomBytes: ota.download.headroomBytes,
              ...(signal ? { signal } : {}),
            });
            return { id: pkg.id, version: pkg.version };
          },
        },
        stagingDir: stagingDirOf(ota, config.dataDir),
        facts: { deviceId: config.deviceId ?? 'local', tags: config.tags, arch: hostArch() },
        readTargets: (where) => readTargetsFrom(where, ota.download),
      },
    );
    io.stdout.write(
      `installed ${formatRef(result.ref)} (${result.bytes} bytes, trusted by ${result.trustedBy})\n`,
    );
    return 0;
  } finally {
    closeStore();
    db.close();
  }
}
