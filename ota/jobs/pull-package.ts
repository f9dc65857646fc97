// A package pulled without a fleet, through the same downloader and verification as OTA jobs (the
// `mnn-edge models pull <url>` command's work; its CLI is agent/cli/commands/models-pull.ts). Trust comes from a
// signed targets document (by default targets.json beside the package; its signatures must verify against the
// device's root, and it updates the anti-rollback state like any other) or, for one install, from a sha256 the
// person typed. There is no third way.

import { mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Downloader } from '../../lib/download/downloader.js';
import { fetchBytes, probeLength } from '../../lib/download/fetch-bytes.js';
import { defaultRetrievalPolicy, type RetrievalPolicy } from '../../lib/download/retrieval-guard.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { parseJsonInput, readJsonFile } from '../../lib/json-input.js';
import type { ModelRef } from '../../models/index.js';
import { OtaRejection } from '../trust/rejection.js';
import { type DeviceFacts, selectTarget } from '../trust/targets.js';
import type { TrustStore } from '../trust/trust.js';

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
