// The root role, TUF's cut to size: a signed document naming which keys may sign targets (and how many must),
// and which keys may sign the next root. A device starts from a root shipped in its image (or, for fleets that
// predate roots, the implicit version 0 built from ota.trustedKeys) and accepts root N+1 only when a threshold
// of root N's root keys AND a threshold of root N+1's own root keys signed it: losing or leaking one set alone
// cannot move the trust anchor.

import { createHash } from 'node:crypto';
import { MnnEdgeError } from '../../lib/errors.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../lib/schema.js';
import { canonicalBytes } from './canonical-json.js';
import { type PublicKeyInfo, parsePublicKey, type SigningKey, signBytes } from './keys.js';
import { OtaRejection } from './rejection.js';
import { countSignatures, requireThreshold } from './signatures.js';
import { type Signature, signaturesSchema } from './targets.js';
import { ISO_UTC_PATTERN, parseIsoUtc } from './timestamps.js';

export const ROOT_TYPE = 'mnn-edge/root';
export const ROOT_SPEC_VERSION = 1;

export interface RootKey {
  keyid: string;
  /** base64 of the raw 32-byte ed25519 key. */
  publicKey: string;
}

export interface RoleKeys {
  keyids: string[];
  threshold: number;
}

export interface RootBody {
  _type: typeof ROOT_TYPE;
  specVersion: typeof ROOT_SPEC_VERSION;
  version: number;
  expires: string;
  keys: RootKey[];
  roles: { root: RoleKeys; targets: RoleKeys };
}

export interface SignedRoot {
  signed: RootBody;
  signatures: Signature[];
}

const KEYID = '^[0-9a-f]{64}$';

const roleSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['keyids', 'threshold'],
  properties: {
    keyids: { type: 'array', minItems: 1, maxItems: 16, items: { type: 'string', pattern: KEYID } },
    threshold: { type: 'integer', minimum: 1, maximum: 16 },
  },
};

export const rootBodySchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-root.json',
  title: 'mnn-edge signed root document (the `signed` part)',
  type: 'object',
  additionalProperties: false,
  required: ['_type', 'specVersion', 'version', 'expires', 'keys', 'roles'],
  properties: {
    _type: { const: ROOT_TYPE },
    specVersion: { const: ROOT_SPEC_VERSION },
    version: { type: 'integer', minimum: 1, description: 'Each new root is exactly one more than the last.' },
    expires: { type: 'string', pattern: ISO_UTC_PATTERN },
    keys: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['keyid', 'publicKey'],
        properties: {
          keyid: { type: 'string', pattern: KEYID },
          publicKey: { type: 'string', minLength: 44, maxLength: 44 },
        },
      },
    },
    roles: {
      type: 'object',
      additionalProperties: false,
      required: ['root', 'targets'],
      properties: { root: roleSchema, targets: roleSchema },
    },
  },
};

export const signedRootSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-signed-root.json',
  title: 'mnn-edge signed root envelope',
  type: 'object',
  additionalProperties: false,
  required: ['signed', 'signatures'],
  properties: { signed: { type: 'object' }, signatures: signaturesSchema },
};

/** A root as the verifier uses it: keys parsed, roles resolved. */
export interface TrustedRoot {
  /** 0 for the implicit root built from ota.trustedKeys. */
  version: number;
  /** Undefined for the implicit root, which never expires. */
  expiresMs: number | undefined;
  expires: string | undefined;
  rootKeys: PublicKeyInfo[];
  rootThreshold: number;
  targetsKeys: PublicKeyInfo[];
  targetsThreshold: number;
  digest: string | undefined;
  document: SignedRoot | undefined;
}

/** Checks the body's schema and its internal consistency; throws ESCHEMA naming the problem. */
export function assertRootBody(value: unknown, what = 'root document'): RootBody {
  const errors = validate(rootBodySchema, value);
  if (errors.length > 0) throw new MnnEdgeError('ESCHEMA', `Invalid ${what}: ${formatSchemaErrors(errors)}`);
  const body = value as RootBody;
  const fail = (why: string) => new MnnEdgeError('ESCHEMA', `Invalid ${what}: ${why}`);
  if (parseIsoUtc(body.expires) === undefined)
    throw fail(`expires ${JSON.stringify(body.expires)} is not a valid time`);
  const known = new Set<string>();
  for (const [i, k] of body.keys.entries()) {
    let info: PublicKeyInfo;
    try {
      info = parsePublicKey(k.publicKey);
    } catch (err) {
      throw fail(`keys[${i}]: ${(err as Error).message}`);
    }
    if (info.keyId !== k.keyid)
      throw fail(`keys[${i}]: keyid does not match its public key (id ${info.keyId})`);
    if (known.has(k.keyid)) throw fail(`keys[${i}]: key ${k.keyid.slice(0, 12)} is listed twice`);
    known.add(k.keyid);
  }
  for (const role of ['root', 'targets'] as const) {
    const r = body.roles[role];
    if (new Set(r.keyids).size !== r.keyids.length) throw fail(`roles.${role} lists a key twice`);
    const missing = r.keyids.find((id) => !known.has(id));
    if (missing !== undefined)
      throw fail(`roles.${role} names key ${missing.slice(0, 12)}, which keys does not list`);
    if (r.threshold > r.keyids.length)
      throw fail(`roles.${role}.threshold ${r.threshold} is larger than its ${r.keyids.length} key(s)`);
  }
  return body;
}

export function rootDigest(body: unknown): string {
  return createHash('sha256').update(canonicalBytes(body)).digest('hex');
}

function roleKeys(body: RootBody, role: 'root' | 'targets'): PublicKeyInfo[] {
  return body.roles[role].keyids.map((id) =>
    parsePublicKey(body.keys.find((k) => k.keyid === id)!.publicKey),
  );
}

export function trustedRootOf(doc: SignedRoot): TrustedRoot {
  const body = doc.signed;
  return {
    version: body.version,
    expiresMs: parseIsoUtc(body.expires),
    expires: body.expires,
    rootKeys: roleKeys(body, 'root'),
    rootThreshold: body.roles.root.threshold,
    targetsKeys: roleKeys(body, 'targets'),
    targetsThreshold: body.roles.targets.threshold,
    digest: rootDigest(body),
    document: doc,
  };
}

/** Version 0: the keys a device was configured with before roots existed sign both roles. */
export function implicitRoot(keys: PublicKeyInfo[], threshold: number): TrustedRoot {
  return {
    version: 0,
    expiresMs: undefined,
    expires: undefined,
    rootKeys: keys,
    rootThreshold: threshold,
    targetsKeys: keys,
    targetsThreshold: threshold,
    digest: undefined,
    document: undefined,
  };
}

/** True when the targets role names other keys or another threshold: the targets state must start over. */
export function targetsRoleChanged(a: TrustedRoot, b: TrustedRoot): boolean {
  const ids = (r: TrustedRoot) =>
    r.targetsKeys
      .map((k) => k.keyId)
      .sort()
      .join(',');
  return a.targetsThreshold !== b.targetsThreshold || ids(a) !== ids(b);
}

function envelopeOf(envelope: unknown, what: string): { doc: SignedRoot; bytes: Buffer } {
  const shape = validate(signedRootSchema, envelope);
  if (shape.length > 0)
    throw new OtaRejection('malformed', `${what} envelope is malformed: ${formatSchemaErrors(shape)}`);
  const doc = envelope as SignedRoot;
  try {
    return { doc, bytes: canonicalBytes(doc.signed) };
  } catch (err) {
    throw new OtaRejection('malformed', `${what} cannot be canonicalised: ${(err as Error).message}`);
  }
}

/** A root read from the image: its own root keys must have signed it (catches a corrupt or unsigned file). */
export function verifySelfSignedRoot(envelope: unknown, what = 'Root'): TrustedRoot {
  const { doc, bytes } = envelopeOf(envelope, what);
  let body: RootBody;
  try {
    body = assertRootBody(doc.signed);
  } catch (err) {
    throw new OtaRejection('malformed', (err as Error).message);
  }
  const next = trustedRootOf({ signed: body, signatures: doc.signatures });
  requireThreshold(
    countSignatures(doc.signatures, bytes, next.rootKeys),
    next.rootThreshold,
    `Root version ${body.version}`,
  );
  return next;
}

/**
 * One step of a rotation: `envelope` must be root trusted.version + 1, signed by a threshold of the trusted
 * root's root keys and by a threshold of its own. Expiry is judged by the caller on the last root of a chain.
 */
export function verifyNextRoot(trusted: TrustedRoot, envelope: unknown): TrustedRoot {
  const { doc, bytes } = envelopeOf(envelope, 'Root');
  // The old keys first: nothing the new document says is read before they vouched for it.
  requireThreshold(
    countSignatures(doc.signatures, bytes, trusted.rootKeys),
    trusted.rootThreshold,
    `New root (by the keys of trusted root version ${trusted.version})`,
  );
  let body: RootBody;
  try {
    body = assertRootBody(doc.signed);
  } catch (err) {
    throw new OtaRejection('malformed', (err as Error).message);
  }
  const next = trustedRootOf({ signed: body, signatures: doc.signatures });
  requireThreshold(
    countSignatures(doc.signatures, bytes, next.rootKeys),
    next.rootThreshold,
    `Root version ${body.version} (by its own root keys)`,
  );
  if (body.version <= trusted.version) {
    throw new OtaRejection(
      'rollback',
      `Root version ${body.version} is not newer than the trusted root version ${trusted.version}`,
      { version: body.version, trusted: trusted.version },
    );
  }
  if (body.version !== trusted.version + 1) {
    throw new OtaRejection(
      'root-chain',
      `Root version ${body.version} does not follow the trusted root version ${trusted.version}: send every root in between`,
      { version: body.version, trusted: trusted.version },
    );
  }
  return next;
}

/** Signs a root body; signatures already on `existing` stay when they cover the same content. */
export function signRoot(body: RootBody, keys: SigningKey[], existing?: SignedRoot): SignedRoot {
  assertRootBody(body);
  const bytes = canonicalBytes(body);
  const kept =
    existing && rootDigest(existing.signed) === rootDigest(body)
      ? existing.signatures.filter((s) => !keys.some((k) => k.keyId === s.keyid))
      : [];
  return {
    signed: body,
    signatures: [...kept, ...keys.map((k) => ({ keyid: k.keyId, sig: signBytes(k.key, bytes) }))],
  };
}
