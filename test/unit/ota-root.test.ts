import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { canonicalBytes } from '../../ota/trust/canonical-json.js';
import {
  generateSigningKey,
  parsePrivateKey,
  parsePublicKey,
  type SigningKey,
  signBytes,
} from '../../ota/trust/keys.js';
import { OtaRejection } from '../../ota/trust/rejection.js';
import { ROOT_TYPE, type RootBody, type SignedRoot, signRoot } from '../../ota/trust/root.js';
import { RootStore } from '../../ota/trust/root-store.js';
import { signTargets, type TargetsBody } from '../../ota/trust/targets.js';
import { TrustStore } from '../../ota/trust/trust.js';

// The root role against real SQLite: rotation needs the old and the new root keys, old roots cannot come
// back, an expired root is refused, and a targets key rotation clears a fast-forwarded targets version.

const NOW = Date.UTC(2026, 10, 29);
const time = { trustedNow: () => NOW, clockStatus: () => ({ synchronized: true, evidence: 'test' }) };

interface Key {
  signer: SigningKey;
  pub: string;
}

function key(): Key {
  const k = generateSigningKey();
  return { signer: parsePrivateKey(k.privateKeyPem), pub: k.publicKey };
}

function rootBody(version: number, root: Key[], targets: Key[], expires = '2027-06-01T00:00:00Z'): RootBody {
  const all = new Map([...root, ...targets].map((k) => [k.signer.keyId, k.pub]));
  return {
    _type: ROOT_TYPE,
    specVersion: 1,
    version,
    expires,
    keys: [...all].map(([keyid, publicKey]) => ({ keyid, publicKey })),
    roles: {
      root: { keyids: root.map((k) => k.signer.keyId), threshold: 1 },
      targets: { keyids: targets.map((k) => k.signer.keyId), threshold: 1 },
    },
  };
}

function targets(version: number, by: Key): unknown {
  const body: TargetsBody = {
    _type: 'mnn-edge/targets',
    specVersion: 1,
    version,
    expires: '2027-01-01T00:00:00Z',
    packages: [],
  };
  return signTargets(body, [by.signer]);
}

function setup(t: { teardown(fn: () => void): void }, shipped?: SignedRoot, legacy: Key[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'ota-root-'));
  const db = openStore(join(dir, 'agent.db'));
  t.teardown(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  let shippedRoot: string | undefined;
  if (shipped) {
    shippedRoot = join(dir, 'root.json');
    writeFileSync(shippedRoot, JSON.stringify(shipped));
  }
  const roots = new RootStore(db, {
    legacyKeys: legacy.map((k) => parsePublicKey(k.pub)),
    legacyThreshold: 1,
    ...(shippedRoot ? { shippedRoot } : {}),
    time,
  });
  return { db, roots, trust: new TrustStore(db, roots, time) };
}

function rejection(fn: () => unknown): OtaRejection {
  try {
    fn();
  } catch (err) {
    if (err instanceof OtaRejection) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

test('a rotation signed by the old and the new root keys is trusted; targets follow the new targets keys', (t) => {
  const [r1, r2, t1, t2] = [key(), key(), key(), key()];
  const v1 = signRoot(rootBody(1, [r1], [t1]), [r1.signer]);
  const { roots, trust } = setup(t, v1);
  t.is(roots.current().version, 1);
  trust.accept(targets(3, t1));
  const v2 = signRoot(rootBody(2, [r2], [t2]), [r1.signer, r2.signer]);
  t.deepEqual(roots.rotate([v2]), { from: 1, to: 2, targetsReset: true, alreadyTrusted: false });
  t.is(roots.current().version, 2);
  t.is(trust.last(), undefined, 'targets state reset with the targets keys');
  t.is(rejection(() => trust.accept(targets(4, t1))).reason, 'unknown-key');
  t.is(trust.accept(targets(1, t2)).body.version, 1);
  t.deepEqual(roots.rotate([v1, v2]), { from: 2, to: 2, targetsReset: false, alreadyTrusted: true });
});

test('a new root needs a threshold of the OLD root keys and of its OWN root keys', (t) => {
  const [r1, r2, t1] = [key(), key(), key()];
  const v1 = signRoot(rootBody(1, [r1], [t1]), [r1.signer]);
  const { roots } = setup(t, v1);
  const onlyNew = signRoot(rootBody(2, [r2], [t1]), [r2.signer]);
  const a = rejection(() => roots.rotate([onlyNew]));
  t.is(a.reason, 'unknown-key');
  t.is(
    a.message,
    `New root (by the keys of trusted root version 1) is signed only by unknown key(s) ${r2.signer.keyId.slice(0, 12)}`,
  );
  const onlyOld = signRoot(rootBody(2, [r2], [t1]), [r1.signer]);
  const b = rejection(() => roots.rotate([onlyOld]));
  t.is(b.reason, 'unknown-key');
  t.regex(b.message, /^Root version 2 \(by its own root keys\) is signed only by unknown key/);
  const two = rootBody(2, [r1, r2], [t1]);
  two.roles.root.threshold = 2;
  const b2 = rejection(() => roots.rotate([signRoot(two, [r1.signer])]));
  t.is(b2.reason, 'threshold');
  t.is(
    b2.message,
    'Root version 2 (by its own root keys) has 1 valid signature(s) from trusted keys; 2 required',
  );
  t.is(roots.current().version, 1);
});

test('old roots replayed, gaps and expired roots are refused and change nothing', (t) => {
  const [r1, t1] = [key(), key()];
  const v1 = signRoot(rootBody(1, [r1], [t1]), [r1.signer]);
  const { roots } = setup(t, v1);
  const v2 = signRoot(rootBody(2, [r1], [t1]), [r1.signer]);
  roots.rotate([v2]);
  const replay = rejection(() => roots.rotate([v1]));
  t.is(replay.reason, 'rollback');
  t.is(replay.message, 'Root version 1 is not newer than the trusted root version 2');
  const other2 = signRoot(rootBody(2, [r1], [t1], '2027-07-01T00:00:00Z'), [r1.signer]);
  t.is(rejection(() => roots.rotate([other2])).reason, 'rollback');
  const v4 = signRoot(rootBody(4, [r1], [t1]), [r1.signer]);
  t.is(rejection(() => roots.rotate([v4])).reason, 'root-chain');
  const expired = signRoot(rootBody(3, [r1], [t1], '2026-01-01T00:00:00Z'), [r1.signer]);
  const e = rejection(() => roots.rotate([expired]));
  t.is(e.reason, 'expired');
  t.is(e.message, 'Root version 3 expired at 2026-01-01T00:00:00Z; now is 2026-11-29T00:00:00.000Z');
  t.is(roots.current().version, 2);
});

test('fast-forward recovery: a targets version of 2^53-1 stops blocking once the targets keys rotate', (t) => {
  const [r1, t1, t2] = [key(), key(), key()];
  const v1 = signRoot(rootBody(1, [r1], [t1]), [r1.signer]);
  const { roots, trust } = setup(t, v1);
  trust.accept(targets(Number.MAX_SAFE_INTEGER, t1));
  const stuck = rejection(() => trust.accept(targets(2, t1)));
  t.is(stuck.reason, 'rollback');
  t.is(stuck.message, `Targets version 2 is older than the trusted version ${Number.MAX_SAFE_INTEGER}`);
  // Rotating only the root keys keeps the targets state: it is the targets key that signed the bad version.
  const r2 = key();
  roots.rotate([signRoot(rootBody(2, [r2], [t1]), [r1.signer, r2.signer])]);
  t.is(trust.last()?.version, Number.MAX_SAFE_INTEGER);
  roots.rotate([signRoot(rootBody(3, [r2], [t2]), [r2.signer])]);
  t.is(trust.last(), undefined);
  t.is(trust.accept(targets(2, t2)).body.version, 2);
});

test('devices configured with trustedKeys move onto roots: root 1 signed by the legacy key and its own', (t) => {
  const [legacy, r1, t1] = [key(), key(), key()];
  const { roots, trust } = setup(t, undefined, [legacy]);
  t.is(roots.current().version, 0);
  trust.accept(targets(5, legacy));
  const v1 = signRoot(rootBody(1, [r1], [t1]), [r1.signer]);
  t.is(rejection(() => roots.rotate([v1])).reason, 'unknown-key');
  const v1ok = signRoot(rootBody(1, [r1], [t1]), [legacy.signer, r1.signer]);
  t.deepEqual(roots.rotate([v1ok]), { from: 0, to: 1, targetsReset: true, alreadyTrusted: false });
  t.is(trust.accept(targets(1, t1)).body.version, 1);
});

test('a trusted root that has expired stops vouching for targets', (t) => {
  const [r1, t1] = [key(), key()];
  const v1 = signRoot(rootBody(1, [r1], [t1], '2026-06-01T00:00:00Z'), [r1.signer]);
  const { trust } = setup(t, v1);
  const e = rejection(() => trust.accept(targets(1, t1)));
  t.is(e.reason, 'expired');
  t.regex(e.message, /^Trusted root version 1 expired at 2026-06-01T00:00:00Z/);
});

test('an unparseable expiry is malformed, not expired; prototype-named keys are refused and nothing is stored', (t) => {
  const [r1, t1] = [key(), key()];
  const { trust, db } = setup(t, signRoot(rootBody(1, [r1], [t1]), [r1.signer]));
  // Signed by hand: signTargets itself refuses a body with such a time.
  const body = {
    _type: 'mnn-edge/targets',
    specVersion: 1,
    version: 2,
    expires: '2026-13-45T99:99:99Z',
    packages: [],
  };
  const bad = {
    signed: body,
    signatures: [{ keyid: t1.signer.keyId, sig: signBytes(t1.signer.key, canonicalBytes(body)) }],
  };
  const m = rejection(() => trust.accept(bad));
  t.is(m.reason, 'malformed');
  t.is(m.message, 'Invalid targets document: expires "2026-13-45T99:99:99Z" is not a valid time');
  const good = signTargets({ ...(body as TargetsBody), expires: '2027-01-01T00:00:00Z' }, [t1.signer]);
  for (const k of ['constructor', '__proto__', 'toString']) {
    const envelope = JSON.parse(
      `{"signed":${JSON.stringify(good.signed)},"signatures":${JSON.stringify(good.signatures)},"${k}":{"attacker":"data"}}`,
    ) as unknown;
    const r = rejection(() => trust.accept(envelope));
    t.is(r.reason, 'malformed', k);
    t.is(
      r.message,
      `Targets envelope is malformed: ${k}: is not a known key (expected one of: signed, signatures)`,
    );
    const inner = JSON.parse(
      `{"signed":${JSON.stringify(good.signed).replace(/}$/, `,"${k}":1}`)},"signatures":${JSON.stringify(good.signatures)}}`,
    ) as unknown;
    t.not(rejection(() => trust.accept(inner)).reason, undefined, `${k} inside the signed part`);
  }
  const row = db.prepare('SELECT COUNT(*) AS n FROM ota_trust').get() as { n: number };
  t.is(row.n, 0, 'nothing from the refused documents was stored');
});
