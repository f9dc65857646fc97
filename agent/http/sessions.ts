import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../lib/sqlite/database.js';

// A session cookie is `<id>.<signature>`: 32 random bytes and their HMAC under a key derived from the pairing
// token. The signature lets the server drop forged cookies without a database read, and deriving the key from
// the token means rotating the token invalidates every cookie at once. The server keeps only sha256(id), with
// the expiry, so logout revokes and a leaked database holds no usable session.

export interface Session {
  idHash: string;
  createdAt: number;
  expiresAt: number;
  client: string;
}

export interface SessionStoreOptions {
  db: Db;
  pairingToken: string;
  /** Trusted wall-clock time (never earlier than the last known good time). */
  now: () => number;
  ttlMs: number;
  /** Oldest sessions are evicted beyond this many. */
  maxSessions?: number;
}

export interface SessionStore {
  create(client: string): { cookieValue: string; session: Session };
  verify(cookieValue: string): Session | undefined;
  /** Revoke the session a cookie names; false when it was unknown or forged. */
  destroy(cookieValue: string): boolean;
  /** Remove expired rows; returns how many. */
  prune(): number;
  count(): number;
}

function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const { db, now, ttlMs } = options;
  const maxSessions = options.maxSessions ?? 32;
  const key = createHmac('sha256', options.pairingToken).update('mnn-edge session cookie v1').digest();
  const sign = (id: string) => createHmac('sha256', key).update(id).digest('base64url');

  const insert = db.prepare(
    'INSERT INTO http_sessions (id_hash, created_at, expires_at, client) VALUES (?, ?, ?, ?)',
  );
  const select = db.prepare(
    'SELECT id_hash AS idHash, created_at AS createdAt, expires_at AS expiresAt, client FROM http_sessions WHERE id_hash = ?',
  );
  const remove = db.prepare('DELETE FROM http_sessions WHERE id_hash = ?');
  const removeExpired = db.prepare('DELETE FROM http_sessions WHERE expires_at <= ?');
  const countAll = db.prepare('SELECT count(*) AS n FROM http_sessions');
  const evictOldest = db.prepare(
    'DELETE FROM http_sessions WHERE id_hash IN (SELECT id_hash FROM http_sessions ORDER BY created_at ASC, rowid ASC LIMIT ?)',
  );

  const count = () => (countAll.get() as { n: number }).n;

  /** The id hash of a correctly signed cookie, else undefined. */
  const idHashOf = (cookieValue: string): string | undefined => {
    const dot = cookieValue.indexOf('.');
    if (dot <= 0) return undefined;
    const id = cookieValue.slice(0, dot);
    const given = Buffer.from(cookieValue.slice(dot + 1));
    const expected = Buffer.from(sign(id));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return sha256(id);
  };

  const create = db.transaction((client: string) => {
    const t = now();
    removeExpired.run(t);
    const excess = count() - maxSessions + 1;
    if (excess > 0) evictOldest.run(excess);
    const id = randomBytes(32).toString('base64url');
    const session: Session = { idHash: sha256(id), createdAt: t, expiresAt: t + ttlMs, client };
    insert.run(session.idHash, session.createdAt, session.expiresAt, session.client);
    return { cookieValue: `${id}.${sign(id)}`, session };
  });

  return {
    create: (client) => create(client),
    verify(cookieValue) {
      const idHash = idHashOf(cookieValue);
      if (idHash === undefined) return undefined;
      const row = select.get(idHash) as Session | undefined;
      if (row === undefined) return undefined;
      if (row.expiresAt <= now()) {
        remove.run(idHash);
        return undefined;
      }
      return row;
    },
    destroy(cookieValue) {
      const idHash = idHashOf(cookieValue);
      return idHash !== undefined && remove.run(idHash).changes > 0;
    },
    prune: () => removeExpired.run(now()).changes,
    count,
  };
}
