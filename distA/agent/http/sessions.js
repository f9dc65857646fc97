import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
function sha256(value) {
    return createHash('sha256').update(value).digest('hex');
}
export function createSessionStore(options) {
    const { db, now, ttlMs } = options;
    const maxSessions = options.maxSessions ?? 32;
    const key = createHmac('sha256', options.pairingToken).update('mnn-edge session cookie v1').digest();
    const sign = (id) => createHmac('sha256', key).update(id).digest('base64url');
    const insert = db.prepare('INSERT INTO http_sessions (id_hash, created_at, expires_at, client) VALUES (?, ?, ?, ?)');
    const select = db.prepare('SELECT id_hash AS idHash, created_at AS createdAt, expires_at AS expiresAt, client FROM http_sessions WHERE id_hash = ?');
    const remove = db.prepare('DELETE FROM http_sessions WHERE id_hash = ?');
    const removeExpired = db.prepare('DELETE FROM http_sessions WHERE expires_at <= ?');
    const countAll = db.prepare('SELECT count(*) AS n FROM http_sessions');
    const evictOldest = db.prepare('DELETE FROM http_sessions WHERE id_hash IN (SELECT id_hash FROM http_sessions ORDER BY created_at ASC, rowid ASC LIMIT ?)');
    const count = () => countAll.get().n;
    /** The id hash of a correctly signed cookie, else undefined. */
    const idHashOf = (cookieValue) => {
        const dot = cookieValue.indexOf('.');
        if (dot <= 0)
            return undefined;
        const id = cookieValue.slice(0, dot);
        const given = Buffer.from(cookieValue.slice(dot + 1));
        const expected = Buffer.from(sign(id));
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
            return undefined;
        return sha256(id);
    };
    const create = db.transaction((client) => {
        const t = now();
        removeExpired.run(t);
        const excess = count() - maxSessions + 1;
        if (excess > 0)
            evictOldest.run(excess);
        const id = randomBytes(32).toString('base64url');
        const session = { idHash: sha256(id), createdAt: t, expiresAt: t + ttlMs, client };
        insert.run(session.idHash, session.createdAt, session.expiresAt, session.client);
        return { cookieValue: `${id}.${sign(id)}`, session };
    });
    return {
        create: (client) => create(client),
        verify(cookieValue) {
            const idHash = idHashOf(cookieValue);
            if (idHash === undefined)
                return undefined;
            const row = select.get(idHash);
            if (row === undefined)
                return undefined;
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
//# sourceMappingURL=sessions.js.map