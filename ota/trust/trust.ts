// Verifying a targets document, in TUF's order: the envelope's shape, then signatures over the canonical bytes,
// and only then anything the document says (its schema, version, expiry). Nothing read from a document
// influences a decision before its signatures have been counted, and the last trusted version is written only
// after every check passed (clients that cached metadata before checking it shipped CVEs).

import { MnnEdgeError } from '../../lib/errors.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import type { Db } from '../../lib/sqlite/database.js';
import { canonicalBytes } from './canonical-json.js';
import { type PublicKeyInfo, parsePublicKey } from './keys.js';
import { OtaRejection } from './rejection.js';
import type { RootStore } from './root-store.js';
import { countSignatures, requireThreshold } from './signatures.js';
import {
  assertTargetsBody,
  type SignedTargets,
  signedTargetsSchema,
  type TargetsBody,
  targetsDigest,
} from './targets.js';
import { parseIsoUtc, type TimeSource } from './timestamps.js';

export interface TrustPolicy {
  keys: PublicKeyInfo[];
  /** How many distinct trusted keys must have signed. */
  threshold: number;
}

export interface TrustedKeyConfig {
  publicKey: string;
  /** Optional; when given it must match the key (catches a pasted wrong key). */
  keyId?: string;
}

export function trustPolicyFromConfig(keys: readonly TrustedKeyConfig[], threshold: number): TrustPolicy {
  const parsed = keys.map((k, i) => {
    const info = parsePublicKey(k.publicKey);
    if (k.keyId !== undefined && k.keyId !== info.keyId) {
      throw new MnnEdgeError(
        'ECONFIG',
        `ota.trustedKeys[${i}]: keyId ${k.keyId} does not match its public key (id ${info.keyId})`,
      );
    }
    return info;
  });
  const unique = new Map(parsed.map((k) => [k.keyId, k]));
  if (!Number.isInteger(threshold) || threshold < 1) {
    throw new MnnEdgeError('ECONFIG', `ota.threshold must be an integer >= 1, got ${threshold}`);
  }
  if (unique.size > 0 && threshold > unique.size) {
    throw new MnnEdgeError(
      'ECONFIG',
      `ota.threshold ${threshold} is larger than the number of trusted keys (${unique.size})`,
    );
  }
  return { keys: [...unique.values()], threshold };
}

export interface TrustedRecord {
  version: number;
  digest: string;
  expiresMs: number;
}

export interface VerifyContext {
  /** trustedNow(): the later of the wall clock and the last known good time. */
  nowMs: number;
  clockSynchronized: boolean;
  last: TrustedRecord | undefined;
}

export interface VerifiedTargets {
  document: SignedTargets;
  body: TargetsBody;
  digest: string;
  signedBy: string[];
  expiresMs: number;
}

export function verifyTargets(envelope: unknown, policy: TrustPolicy, ctx: VerifyContext): VerifiedTargets {
  const shapeErrors = validate(signedTargetsSchema, envelope);
  if (shapeErrors.length > 0) {
    throw new OtaRejection('malformed', `Targets envelope is malformed: ${formatSchemaErrors(shapeErrors)}`);
  }
  const doc = envelope as SignedTargets;
  if (policy.keys.length === 0) {
    throw new OtaRejection('unknown-key', 'No trusted keys are configured (ota.trustedKeys is empty)');
  }
  let bytes: Buffer;
  try {
    bytes = canonicalBytes(doc.signed);
  } catch (err) {
    throw new OtaRejection(
      'malformed',
      `Targets document cannot be canonicalised: ${(err as Error).message}`,
    );
  }
  const count = countSignatures(doc.signatures, bytes, policy.keys);
  requireThreshold(count, policy.threshold, 'Targets', true);
  const valid = count.valid;

  // Signed by enough trusted keys: from here on the content may be read.
  let body: TargetsBody;
  try {
    body = assertTargetsBody(doc.signed);
  } catch (err) {
    throw new OtaRejection('malformed', (err as Error).message);
  }
  const digest = targetsDigest(body);
  if (ctx.last !== undefined) {
    if (body.version < ctx.last.version) {
      throw new OtaRejection(
        'rollback',
        `Targets version ${body.version} is older than the trusted version ${ctx.last.version}`,
        { version: body.version, trusted: ctx.last.version },
      );
    }
    if (body.version === ctx.last.version && digest !== ctx.last.digest) {
      throw new OtaRejection(
        'rollback',
        `Targets version ${body.version} was already trusted with different content`,
        { version: body.version },
      );
    }
  }
  const expiresMs = parseIsoUtc(body.expires);
  if (expiresMs === undefined) {
    // assertTargetsBody already refuses these; kept so no path can turn a bad time into "expired" or "valid".
    throw new OtaRejection('malformed', `Targets version ${body.version} has an invalid expiry time`);
  }
  if (!(expiresMs > ctx.nowMs)) {
    const clock = ctx.clockSynchronized
      ? ''
      : ' (the clock is not synchronised; judged by the last known good time)';
    throw new OtaRejection(
      'expired',
      `Targets version ${body.version} expired at ${body.expires}; now is ${new Date(ctx.nowMs).toISOString()}${clock}`,
      { expires: body.expires, nowMs: ctx.nowMs, clockSynchronized: ctx.clockSynchronized },
    );
  }
  return { document: doc, body, digest, signedBy: [...valid], expiresMs };
}

/**
 * Last trusted targets in SQLite: the anti-rollback state. The targets keys come from the trusted root (a
 * RootStore) or, in tests and tools without one, from a fixed policy.
 */
export class TrustStore {
  readonly #db: Db;
  readonly #source: TrustPolicy | RootStore;
  readonly #time: TimeSource;

  constructor(db: Db, source: TrustPolicy | RootStore, time: TimeSource) {
    this.#db = db;
    this.#source = source;
    this.#time = time;
  }

  /** The targets keys and threshold trusted now. */
  get policy(): TrustPolicy {
    if (!isRootStore(this.#source)) return this.#source;
    const root = this.#source.current();
    return { keys: root.targetsKeys, threshold: root.targetsThreshold };
  }

  /** The root store, when trust comes from a root (rotations go through it). */
  get roots(): RootStore | undefined {
    return isRootStore(this.#source) ? this.#source : undefined;
  }

  last(): TrustedRecord | undefined {
    const row = this.#db.prepare('SELECT version, digest, expires_ms FROM ota_trust WHERE id = 1').get() as
      | { version: number; digest: string; expires_ms: number }
      | undefined;
    return row ? { version: row.version, digest: row.digest, expiresMs: row.expires_ms } : undefined;
  }

  /** Verifies against the stored state and, only if every check passes, records the document as trusted. */
  accept(envelope: unknown): VerifiedTargets {
    const status = this.#time.clockStatus();
    const nowMs = this.#time.trustedNow();
    let policy: TrustPolicy;
    if (isRootStore(this.#source)) {
      const root = this.#source.current();
      this.#source.assertCurrent(root, nowMs);
      policy = { keys: root.targetsKeys, threshold: root.targetsThreshold };
    } else policy = this.#source;
    const verified = verifyTargets(envelope, policy, {
      nowMs,
      clockSynchronized: status.synchronized,
      last: this.last(),
    });
    this.#db
      .prepare(
        `INSERT INTO ota_trust (id, version, digest, expires_ms, document, accepted_at) VALUES (1, ?, ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET version = excluded.version, digest = excluded.digest,
           expires_ms = excluded.expires_ms, document = excluded.document, accepted_at = excluded.accepted_at
         WHERE excluded.version >= ota_trust.version`,
      )
      .run(
        verified.body.version,
        verified.digest,
        verified.expiresMs,
        JSON.stringify(verified.document),
        Date.now(),
      );
    return verified;
  }
}

function isRootStore(source: TrustPolicy | RootStore): source is RootStore {
  return typeof (source as RootStore).current === 'function';
}
