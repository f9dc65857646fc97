import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { otaSchemaFiles } from '../../ota/tools/export-schemas.js';
import { canonicalJson } from '../../ota/trust/canonical-json.js';
import { generateSigningKey, parsePrivateKey, parsePublicKey } from '../../ota/trust/keys.js';
import { OtaRejection } from '../../ota/trust/rejection.js';
import { selectTarget, signTargets, type TargetsBody, upsertArtifact } from '../../ota/trust/targets.js';
import { TrustStore, trustPolicyFromConfig, verifyTargets } from '../../ota/trust/trust.js';
import { repoRoot } from '../helpers/paths.js';

const NOW = Date.UTC(2026, 10, 29);

function body(version: number, expires = '2027-01-01T00:00:00Z'): TargetsBody {
  return upsertArtifact(
    { _type: 'mnn-edge/targets', specVersion: 1, version, expires, packages: [] },
    'tiny-llm',
    '1.0.0',
    { variant: 'cpu', name: 'tiny-llm-1.0.0-cpu.tar', length: 1024, sha256: 'a'.repeat(64) },
  );
}

function keyPair() {
  const k = generateSigningKey();
  return { pub: k.publicKey, signer: parsePrivateKey(k.privateKeyPem) };
}

function rejectionOf(fn: () => unknown): OtaRejection {
  const err = (() => {
    try {
      fn();
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  if (!(err instanceof OtaRejection)) throw new Error(`expected an OtaRejection, got ${String(err)}`);
  return err;
}

test('canonical JSON sorts keys, drops undefined and refuses floats', (t) => {
  t.is(
    canonicalJson({ b: 1, a: [true, null, 'x'], c: undefined, é: 2, Z: 3 }),
    '{"Z":3,"a":[true,null,"x"],"b":1,"é":2}',
  );
  t.throws(() => canonicalJson({ x: 1.5 }), {
    message: 'Cannot canonicalise (root).x: only safe integers are allowed, got 1.5',
  });
  t.throws(() => canonicalJson({ d: new Date(0) }), {
    message: 'Cannot canonicalise (root).d: not a plain object',
  });
});

test('keys round-trip and ids are derived from the key', (t) => {
  const k = generateSigningKey();
  t.is(parsePublicKey(k.publicKey).keyId, k.keyId);
  t.is(parsePrivateKey(k.privateKeyPem).keyId, k.keyId);
  t.throws(() => parsePublicKey('abc'), {
    message: 'Invalid ed25519 public key: expected base64 of 32 bytes, got "abc"',
  });
  t.throws(() => trustPolicyFromConfig([{ publicKey: k.publicKey, keyId: 'f'.repeat(64) }], 1), {
    message: `ota.trustedKeys[0]: keyId ${'f'.repeat(64)} does not match its public key (id ${k.keyId})`,
  });
  t.throws(() => trustPolicyFromConfig([{ publicKey: k.publicKey }], 2), {
    message: 'ota.threshold 2 is larger than the number of trusted keys (1)',
  });
});

test('a document signed by a trusted key verifies; the selected artifact follows selectors', (t) => {
  const a = keyPair();
  const policy = trustPolicyFromConfig([{ publicKey: a.pub }], 1);
  const doc = signTargets(body(3), [a.signer]);
  const v = verifyTargets(doc, policy, { nowMs: NOW, clockSynchronized: true, last: undefined });
  t.is(v.body.version, 3);
  t.deepEqual(v.signedBy, [a.signer.keyId]);
  const sel = selectTarget(v.body, 'tiny-llm', '1.0.0', { deviceId: 'd1', tags: [], arch: 'arm64' });
  t.is(typeof sel === 'string' ? sel : sel.artifact.variant, 'cpu');
  t.is(
    selectTarget(v.body, 'tiny-llm', '2.0.0', { deviceId: 'd1', tags: [], arch: 'arm64' }),
    'package tiny-llm@2.0.0 is not in targets version 3',
  );
});

test('attack set at the metadata level: each rejected with its reason', (t) => {
  const a = keyPair();
  const stranger = keyPair();
  const policy = trustPolicyFromConfig([{ publicKey: a.pub }], 1);
  const ctx = { nowMs: NOW, clockSynchronized: true, last: undefined };

  const tampered = signTargets(body(3), [a.signer]);
  tampered.signed.packages[0]!.artifacts[0]!.length = 2048;
  const bad = rejectionOf(() => verifyTargets(tampered, policy, ctx));
  t.is(bad.reason, 'bad-signature');
  t.is(bad.message, `Targets signature by key ${a.signer.keyId.slice(0, 12)} does not verify`);

  const unknown = rejectionOf(() => verifyTargets(signTargets(body(3), [stranger.signer]), policy, ctx));
  t.is(unknown.reason, 'unknown-key');
  t.is(unknown.message, `Targets are signed only by unknown key(s) ${stranger.signer.keyId.slice(0, 12)}`);

  const unsigned = rejectionOf(() => verifyTargets({ signed: body(3), signatures: [] }, policy, ctx));
  t.is(unsigned.message, 'Targets document carries no signatures');

  const expired = rejectionOf(() =>
    verifyTargets(signTargets(body(3, '2026-11-01T00:00:00Z'), [a.signer]), policy, {
      ...ctx,
      clockSynchronized: false,
    }),
  );
  t.is(expired.reason, 'expired');
  t.is(
    expired.message,
    'Targets version 3 expired at 2026-11-01T00:00:00Z; now is 2026-11-29T00:00:00.000Z (the clock is not synchronised; judged by the last known good time)',
  );

  const older = rejectionOf(() =>
    verifyTargets(signTargets(body(2), [a.signer]), policy, {
      ...ctx,
      last: { version: 3, digest: 'x', expiresMs: NOW + 1 },
    }),
  );
  t.is(older.reason, 'rollback');
  t.is(older.message, 'Targets version 2 is older than the trusted version 3');

  const malformed = rejectionOf(() => verifyTargets({ signed: body(3) }, policy, ctx));
  t.is(malformed.reason, 'malformed');
  t.is(malformed.message, 'Targets envelope is malformed: signatures: is required but missing');
});

test('threshold counts distinct trusted keys; signatures can be added one holder at a time', (t) => {
  const a = keyPair();
  const b = keyPair();
  const policy = trustPolicyFromConfig([{ publicKey: a.pub }, { publicKey: b.pub }], 2);
  const ctx = { nowMs: NOW, clockSynchronized: true, last: undefined };
  const once = signTargets(body(1), [a.signer]);
  const dup = { ...once, signatures: [...once.signatures, ...once.signatures] };
  const r = rejectionOf(() => verifyTargets(dup, policy, ctx));
  t.is(r.reason, 'threshold');
  t.is(r.message, 'Targets have 1 valid signature(s) from trusted keys; 2 required');
  const twice = signTargets(body(1), [b.signer], once);
  t.is(twice.signatures.length, 2);
  t.is(verifyTargets(twice, policy, ctx).signedBy.length, 2);
});

test('TrustStore persists only accepted documents and refuses replays of older ones', (t) => {
  const db = openStore(':memory:');
  const a = keyPair();
  const time = { trustedNow: () => NOW, clockStatus: () => ({ synchronized: true, evidence: 'test' }) };
  const store = new TrustStore(db, trustPolicyFromConfig([{ publicKey: a.pub }], 1), time);
  const v5 = signTargets(body(5), [a.signer]);
  store.accept(v5);
  t.is(store.last()?.version, 5);
  // The same document again (a retransmitted job) is fine.
  t.is(store.accept(v5).body.version, 5);
  t.is(rejectionOf(() => store.accept(signTargets(body(4), [a.signer]))).reason, 'rollback');
  const sameVersionOtherContent = signTargets(body(5, '2027-02-01T00:00:00Z'), [a.signer]);
  t.is(
    rejectionOf(() => store.accept(sameVersionOtherContent)).message,
    'Targets version 5 was already trusted with different content',
  );
  // A rejected newer document (expired) leaves the trusted version untouched.
  t.is(
    rejectionOf(() => store.accept(signTargets(body(9, '2026-01-01T00:00:00Z'), [a.signer]))).reason,
    'expired',
  );
  t.is(store.last()?.version, 5);
  db.close();
});

test('published docs/schemas/ota-*.json match the schemas the code validates with', (t) => {
  for (const [name, text] of Object.entries(otaSchemaFiles())) {
    t.is(
      readFileSync(join(repoRoot, 'docs', 'schemas', name), 'utf8'),
      text,
      `${name}: run npx tsx ota/tools/export-schemas.ts`,
    );
  }
});
