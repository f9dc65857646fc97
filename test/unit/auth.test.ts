import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  bearerToken,
  constantTimeEqual,
  createAuthenticator,
  parseCookies,
  SESSION_COOKIE,
  sessionCookie,
} from '../../agent/http/auth.js';
import { createLoginLimiter } from '../../agent/http/login-limiter.js';
import { ensurePairingToken, readPairingToken } from '../../agent/http/pairing-token.js';
import { createSessionStore } from '../../agent/http/sessions.js';
import { openStore } from '../../agent/store/database.js';

const TOKEN = 'A'.repeat(43);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-auth-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the pairing token is created once, 0600, 256 bits of base64url', (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = ensurePairingToken(dataDir);
  t.true(first.created);
  t.regex(first.token, /^[A-Za-z0-9_-]{43}$/);
  t.is(statSync(first.path).mode & 0o777, 0o600);
  const again = ensurePairingToken(dataDir);
  t.false(again.created);
  t.is(again.token, first.token);
  t.not(ensurePairingToken(join(tempDir(t), 'other')).token, first.token);
});

test('a token file that became world-readable is tightened; a mangled one is refused', (t) => {
  const dataDir = tempDir(t);
  const { path } = ensurePairingToken(dataDir);
  chmodSync(path, 0o644);
  ensurePairingToken(dataDir);
  t.is(statSync(path).mode & 0o777, 0o600);
  writeFileSync(path, 'short\n');
  t.throws(() => readPairingToken(dataDir), {
    message: `Pairing token file ${path} does not hold a base64url token of at least 43 characters; delete it to create a new one`,
  });
});

test('constant-time comparison handles different lengths', (t) => {
  t.true(constantTimeEqual(TOKEN, TOKEN));
  t.false(constantTimeEqual(TOKEN, `${TOKEN}x`));
  t.false(constantTimeEqual(TOKEN, ''));
});

test('cookie and bearer parsing', (t) => {
  t.deepEqual(
    [...parseCookies('a=1; mnn_edge_session="v.s"; a=2; junk; =x')],
    [
      ['a', '1'],
      ['mnn_edge_session', 'v.s'],
    ],
  );
  t.is(bearerToken('Bearer abc'), 'abc');
  t.is(bearerToken('bearer   abc  '), 'abc');
  t.is(bearerToken('Basic abc'), undefined);
  t.is(bearerToken('Bearer a b'), undefined);
  t.is(
    sessionCookie('v', { maxAgeS: 60, secure: true }),
    'mnn_edge_session=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure',
  );
  t.is(
    sessionCookie('', { maxAgeS: 0, secure: false }),
    'mnn_edge_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
  );
});

test('sessions: signed cookies, server-side expiry, revocation, eviction beyond the cap', (t) => {
  const db = openStore(':memory:');
  t.teardown(() => db.close());
  let now = 1_000_000;
  const sessions = createSessionStore({
    db,
    pairingToken: TOKEN,
    now: () => now,
    ttlMs: 60_000,
    maxSessions: 2,
  });
  const a = sessions.create('10.0.0.1');
  t.is(sessions.verify(a.cookieValue)?.client, '10.0.0.1');
  // Tampering with either half is detected before the database is consulted.
  const [id, sig] = a.cookieValue.split('.') as [string, string];
  // Change the last character to a different one (replacing it with a fixed letter is a no-op 1 time in 64).
  const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A');
  t.is(sessions.verify(`${id}.${flip(sig)}`), undefined);
  t.is(sessions.verify(`${flip(id)}.${sig}`), undefined);
  t.is(sessions.verify('no-dot'), undefined);
  // Only a hash of the id is stored.
  const stored = db.prepare('SELECT id_hash FROM http_sessions').all() as { id_hash: string }[];
  t.false(stored.some((r) => r.id_hash.includes(id)));
  // A different pairing token (rotation) invalidates the cookie.
  const rotated = createSessionStore({ db, pairingToken: 'B'.repeat(43), now: () => now, ttlMs: 60_000 });
  t.is(rotated.verify(a.cookieValue), undefined);

  now += 60_000;
  t.is(sessions.verify(a.cookieValue), undefined, 'expired');
  const b = sessions.create('b');
  t.true(sessions.destroy(b.cookieValue));
  t.false(sessions.destroy(b.cookieValue));
  t.is(sessions.verify(b.cookieValue), undefined);

  const c = sessions.create('c');
  now += 1;
  const d = sessions.create('d');
  now += 1;
  const e = sessions.create('e');
  t.is(sessions.count(), 2);
  t.is(sessions.verify(c.cookieValue), undefined, 'oldest evicted');
  t.truthy(sessions.verify(d.cookieValue));
  t.truthy(sessions.verify(e.cookieValue));
  now += 60_000;
  t.is(sessions.prune(), 2);
});

test('authenticator: bearer token, session cookie, and nothing else', (t) => {
  const db = openStore(':memory:');
  t.teardown(() => db.close());
  const sessions = createSessionStore({ db, pairingToken: TOKEN, now: () => 5, ttlMs: 1000 });
  const auth = createAuthenticator(TOKEN, sessions);
  t.deepEqual(auth.authenticate({ authorization: `Bearer ${TOKEN}` }), { method: 'bearer' });
  t.is(auth.authenticate({ authorization: 'Bearer wrong' }), undefined);
  // A wrong bearer token is not rescued by a valid cookie: the client said who it is.
  const { cookieValue } = sessions.create('x');
  t.is(
    auth.authenticate({ authorization: 'Bearer wrong', cookie: `${SESSION_COOKIE}=${cookieValue}` }),
    undefined,
  );
  t.like(auth.authenticate({ cookie: `other=1; ${SESSION_COOKIE}=${cookieValue}` }), {
    method: 'session',
    session: { createdAt: 5, expiresAt: 1005 },
  });
  t.is(auth.authenticate({}), undefined);
  t.true(auth.tokenMatches(TOKEN));
  t.false(auth.tokenMatches(TOKEN.toLowerCase()));
});

test('login limiter: 5 failures per minute per address on the monotonic clock', (t) => {
  let mono = 0;
  const limiter = createLoginLimiter({
    clock: { monotonicMs: () => mono },
    maxFailures: 5,
    windowMs: 60_000,
  });
  for (let i = 0; i < 5; i++) {
    t.is(limiter.retryAfterMs('a'), 0);
    limiter.recordFailure('a');
    mono += 1_000;
  }
  t.is(limiter.retryAfterMs('a'), 55_000);
  t.is(limiter.retryAfterMs('b'), 0, 'other addresses are unaffected');
  mono += 55_000;
  t.is(limiter.retryAfterMs('a'), 0);
});

test('login limiter forgets the oldest addresses beyond its bound', (t) => {
  const limiter = createLoginLimiter({ clock: { monotonicMs: () => 0 }, maxFailures: 1, maxTracked: 2 });
  limiter.recordFailure('a');
  limiter.recordFailure('b');
  limiter.recordFailure('c');
  t.is(limiter.retryAfterMs('a'), 0);
  t.true(limiter.retryAfterMs('c') > 0);
});
