// The device's root of trust in SQLite. A rotation (a chain of roots, N+1 … M) is verified entirely in memory
// and then written in ONE transaction together with its consequence for the targets state: when the targets
// role's keys or threshold changed, the targets anti-rollback record is deleted (TUF's fast-forward recovery:
// a document signed with version 2^53-1 by a key that has since been rotated out no longer blocks anything).
// A kill at any point leaves the old root and its targets state, or the new root and its reset: never neither.

import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { readJsonFile } from '../../lib/json-input.js';
import type { Logger } from '../../lib/log.js';
import { escapeControl } from '../../lib/sanitize.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { PublicKeyInfo } from './keys.js';
import { OtaRejection } from './rejection.js';
import {
  implicitRoot,
  rootDigest,
  type SignedRoot,
  type TrustedRoot,
  targetsRoleChanged,
  trustedRootOf,
  verifyNextRoot,
  verifySelfSignedRoot,
} from './root.js';
import type { TimeSource } from './timestamps.js';

export interface RootRotation {
  from: number;
  to: number;
  /** True when the targets keys changed and the targets anti-rollback state was reset. */
  targetsReset: boolean;
  /** True when the chain's last root was already the trusted one (a re-delivered rotation). */
  alreadyTrusted: boolean;
}

export interface RootStoreOptions {
  /** ota.trustedKeys / ota.threshold: the implicit version 0 for devices without a root. */
  legacyKeys: PublicKeyInfo[];
  legacyThreshold: number;
  /** ota.rootFile: the root shipped in the image, trusted when the database holds none yet. */
  shippedRoot?: string;
  time: Pick<TimeSource, 'trustedNow'>;
  logger?: Logger;
}

export class RootStore {
  readonly #db: Db;
  readonly #o: RootStoreOptions;

  constructor(db: Db, options: RootStoreOptions) {
    this.#db = db;
    this.#o = options;
    if (options.shippedRoot !== undefined) this.#adoptShipped(options.shippedRoot);
  }

  /** The root trusted now: the stored one, else the implicit root from the configured keys. */
  current(): TrustedRoot {
    const row = this.#db.prepare('SELECT document FROM ota_root WHERE id = 1').get() as
      | { document: string }
      | undefined;
    if (!row) return implicitRoot(this.#o.legacyKeys, this.#o.legacyThreshold);
    // Written by us after verification; parsed again only to rebuild the key objects.
    return trustedRootOf(JSON.parse(row.document) as SignedRoot);
  }

  /**
   * Verifies a chain of roots (ascending versions; entries not newer than the trusted root are skipped, as a
   * re-delivered rotation contains them) and, only if all of it verifies and the last root has not expired,
   * trusts the last one. Throws OtaRejection otherwise, leaving everything as it was.
   */
  rotate(chain: readonly unknown[]): RootRotation {
    if (chain.length === 0) throw new OtaRejection('malformed', 'Root rotation carries no root documents');
    const start = this.current();
    const lastVersion = versionOf(chain.at(-1));
    if (lastVersion !== undefined && lastVersion <= start.version) {
      // A re-delivered rotation ends with the root already trusted; anything else is an old root replayed.
      if (
        lastVersion === start.version &&
        start.digest !== undefined &&
        digestOf(chain.at(-1)) === start.digest
      )
        return { from: start.version, to: start.version, targetsReset: false, alreadyTrusted: true };
      throw new OtaRejection(
        'rollback',
        `Root version ${lastVersion} is not newer than the trusted root version ${start.version}`,
        { version: lastVersion, trusted: start.version },
      );
    }
    let trusted = start;
    let targetsReset = false;
    for (const envelope of chain) {
      const version = versionOf(envelope);
      if (version !== undefined && version <= start.version) continue;
      const next = verifyNextRoot(trusted, envelope);
      if (targetsRoleChanged(trusted, next)) targetsReset = true;
      trusted = next;
    }
    const now = this.#o.time.trustedNow();
    if (!(trusted.expiresMs! > now)) {
      throw new OtaRejection(
        'expired',
        `Root version ${trusted.version} expired at ${trusted.expires}; now is ${new Date(now).toISOString()}`,
        { version: trusted.version, expires: trusted.expires },
      );
    }
    this.#commit(trusted, targetsReset);
    this.#o.logger?.info('ota root rotated', { from: start.version, to: trusted.version, targetsReset });
    return { from: start.version, to: trusted.version, targetsReset, alreadyTrusted: false };
  }

  /** Throws 'expired' when the trusted root has expired: a frozen root must not keep vouching for targets. */
  assertCurrent(root: TrustedRoot, nowMs: number): void {
    if (root.expiresMs === undefined || root.expiresMs > nowMs) return;
    throw new OtaRejection(
      'expired',
      `Trusted root version ${root.version} expired at ${root.expires}; now is ${new Date(nowMs).toISOString()}: the fleet must rotate the root`,
      { rootVersion: root.version, expires: root.expires },
    );
  }

  #commit(root: TrustedRoot, resetTargets: boolean): void {
    this.#db.transaction(() => {
      this.#db
        .prepare(
          `INSERT INTO ota_root (id, version, digest, expires_ms, document, accepted_at) VALUES (1, ?, ?, ?, ?, ?)
           ON CONFLICT(id) DO UPDATE SET version = excluded.version, digest = excluded.digest,
             expires_ms = excluded.expires_ms, document = excluded.document, accepted_at = excluded.accepted_at`,
        )
        .run(root.version, root.digest!, root.expiresMs!, JSON.stringify(root.document), Date.now());
      if (resetTargets) this.#db.prepare('DELETE FROM ota_trust').run();
    })();
  }

  /** The image's root: trusted as is on first start; a newer one later must chain from the stored root. */
  #adoptShipped(path: string): void {
    const raw = readJsonFile(path, 'ota.rootFile', { maxBytes: INPUT_LIMITS.metadataMaxBytes });
    const stored = this.#db.prepare('SELECT version FROM ota_root WHERE id = 1').get() as
      | { version: number }
      | undefined;
    if (stored === undefined) {
      let root: TrustedRoot;
      try {
        root = verifySelfSignedRoot(raw, `Root in ${path}`);
      } catch (err) {
        throw new MnnEdgeError('ECONFIG', `ota.rootFile ${path}: ${escapeControl((err as Error).message)}`);
      }
      // The legacy keys' own state (if any) was for the implicit root; the image's root starts afresh only if
      // it names other targets keys.
      this.#commit(root, targetsRoleChanged(implicitRoot(this.#o.legacyKeys, this.#o.legacyThreshold), root));
      this.#o.logger?.info('ota root installed from the image', { version: root.version, path });
      return;
    }
    const version = versionOf(raw);
    if (version === undefined || version <= stored.version) return;
    try {
      this.rotate([raw]);
    } catch (err) {
      // An image may carry a root the fleet never chained to; the stored root stays in charge.
      this.#o.logger?.warn('ota.rootFile not adopted', { path, error: (err as Error).message });
    }
  }
}

function digestOf(envelope: unknown): string | undefined {
  try {
    return rootDigest((envelope as { signed: unknown }).signed);
  } catch {
    return undefined;
  }
}

function versionOf(envelope: unknown): number | undefined {
  if (typeof envelope !== 'object' || envelope === null || !Object.hasOwn(envelope, 'signed'))
    return undefined;
  const signed = (envelope as { signed: unknown }).signed;
  if (typeof signed !== 'object' || signed === null || !Object.hasOwn(signed, 'version')) return undefined;
  const v = (signed as { version: unknown }).version;
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
}
