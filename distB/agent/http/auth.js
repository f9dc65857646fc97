import { createHash, timingSafeEqual } from 'node:crypto';
// Two ways in, both rooted in the pairing token: browsers exchange it once for a session cookie (HttpOnly, so
// page scripts never hold the token; SameSite=Strict, so other sites cannot ride it), API clients send it as
// `Authorization: Bearer <token>` on every request.
export const SESSION_COOKIE = 'mnn_edge_session';
function digest(value) {
    return createHash('sha256').update(value, 'utf8').digest();
}
/** Comparing fixed-length digests keeps the comparison's time independent of where, and whether, lengths differ. */
export function constantTimeEqual(a, b) {
    return timingSafeEqual(digest(a), digest(b));
}
export function parseCookies(header) {
    const cookies = new Map();
    if (header === undefined)
        return cookies;
    for (const part of header.split(';')) {
        const eq = part.indexOf('=');
        if (eq === -1)
            continue;
        const name = part.slice(0, eq).trim();
        let value = part.slice(eq + 1).trim();
        if (value.startsWith('"') && value.endsWith('"') && value.length >= 2)
            value = value.slice(1, -1);
        // First one wins, as browsers send the most specific path first.
        if (name.length > 0 && !cookies.has(name))
            cookies.set(name, value);
    }
    return cookies;
}
export function bearerToken(header) {
    if (header === undefined)
        return undefined;
    const m = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
    return m?.[1];
}
export function createAuthenticator(pairingToken, sessions) {
    const tokenMatches = (candidate) => constantTimeEqual(candidate, pairingToken);
    return {
        tokenMatches,
        authenticate(headers) {
            const bearer = bearerToken(headers.authorization);
            if (bearer !== undefined)
                return tokenMatches(bearer) ? { method: 'bearer' } : undefined;
            const cookieValue = parseCookies(headers.cookie).get(SESSION_COOKIE);
            if (cookieValue === undefined)
                return undefined;
            const session = sessions.verify(cookieValue);
            if (session === undefined)
                return undefined;
            return {
                method: 'session',
                session: { createdAt: session.createdAt, expiresAt: session.expiresAt },
                cookieValue,
            };
        },
    };
}
/**
 * Why a request without valid credentials is refused, in words the sender can act on: no credentials, a wrong
 * bearer token (which part is wrong is not said), or a session cookie that expired or was logged out.
 */
export function refusalFor(headers) {
    if (bearerToken(headers.authorization) !== undefined)
        return {
            code: 'invalid_token',
            message: 'The bearer token is not valid: compare it with the output of `mnn-edge token` on the device',
            wwwAuthenticate: 'Bearer realm="mnn-edge", error="invalid_token"',
        };
    if (parseCookies(headers.cookie).has(SESSION_COOKIE))
        return {
            code: 'session_expired',
            message: 'The session has expired or was logged out: log in again with the pairing token',
            wwwAuthenticate: 'Bearer realm="mnn-edge"',
        };
    return {
        code: 'unauthorized',
        message: 'Authentication required: log in with the pairing token (POST /api/login) or send Authorization: Bearer <token>',
        wwwAuthenticate: 'Bearer realm="mnn-edge"',
    };
}
export function sessionCookie(value, options) {
    return [
        `${SESSION_COOKIE}=${value}`,
        'Path=/',
        `Max-Age=${Math.max(0, Math.floor(options.maxAgeS))}`,
        'HttpOnly',
        'SameSite=Strict',
        ...(options.secure ? ['Secure'] : []),
    ].join('; ');
}
//# sourceMappingURL=auth.js.map