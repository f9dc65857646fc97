// The signed targets document: TUF's targets role cut down to what a model fleet needs. It lists packages (id,
// version, selectors, one artifact per variant with its length and sha256); the per-file hashes live in the
// manifest inside each package, whose tarball hash this document pins. `version` only ever grows and `expires`
// bounds how long a captured document can be replayed (a freeze attack).

import { createHash } from 'node:crypto';
import { MnnEdgeError } from '../../lib/errors.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../lib/schema.js';
import { canonicalBytes } from './canonical-json.js';
import { type SigningKey, signBytes } from './keys.js';
import { ISO_UTC_PATTERN, parseIsoUtc } from './timestamps.js';

export const TARGETS_TYPE = 'mnn-edge/targets';
export const TARGETS_SPEC_VERSION = 1;

export interface Selectors {
  deviceIds?: string[];
  tags?: string[];
  /** process.arch values: arm64, x64, riscv64 … */
  arch?: string[];
}

export interface Artifact {
  variant: string;
  /** File name, resolved against the job's base URL; never a path. */
  name: string;
  length: number;
  sha256: string;
  selectors?: Selectors;
}

export interface TargetPackage {
  id: string;
  version: string;
  selectors?: Selectors;
  artifacts: Artifact[];
}

export interface TargetsBody {
  _type: typeof TARGETS_TYPE;
  specVersion: typeof TARGETS_SPEC_VERSION;
  version: number;
  /** ISO 8601 UTC */
  expires: string;
  packages: TargetPackage[];
}

export interface Signature {
  keyid: string;
  sig: string;
}

export interface SignedTargets {
  signed: TargetsBody;
  signatures: Signature[];
}

const NAME = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
const ISO_UTC = ISO_UTC_PATTERN;

const selectorsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    deviceIds: { type: 'array', items: { type: 'string', minLength: 1 } },
    tags: { type: 'array', items: { type: 'string', minLength: 1 } },
    arch: { type: 'array', items: { type: 'string', minLength: 1 } },
  },
};

export const artifactSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['variant', 'name', 'length', 'sha256'],
  properties: {
    variant: { type: 'string', pattern: NAME },
    name: { type: 'string', pattern: NAME },
    length: { type: 'integer', minimum: 1 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    selectors: selectorsSchema,
  },
};

export const targetsBodySchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-targets.json',
  title: 'mnn-edge signed targets document (the `signed` part)',
  type: 'object',
  additionalProperties: false,
  required: ['_type', 'specVersion', 'version', 'expires', 'packages'],
  properties: {
    _type: { const: TARGETS_TYPE },
    specVersion: { const: TARGETS_SPEC_VERSION },
    version: { type: 'integer', minimum: 1, description: 'Grows with every document the operator signs.' },
    expires: { type: 'string', pattern: ISO_UTC },
    packages: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'version', 'artifacts'],
        properties: {
          id: { type: 'string', pattern: NAME },
          version: { type: 'string', pattern: NAME },
          selectors: selectorsSchema,
          artifacts: { type: 'array', minItems: 1, items: artifactSchema },
        },
      },
    },
  },
};

export const signaturesSchema: JsonSchema = {
  type: 'array',
  maxItems: 16,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['keyid', 'sig'],
    properties: {
      keyid: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      sig: { type: 'string', minLength: 1, maxLength: 200 },
    },
  },
};

export const signedTargetsSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/ota-signed-targets.json',
  title: 'mnn-edge signed targets envelope',
  type: 'object',
  additionalProperties: false,
  required: ['signed', 'signatures'],
  properties: {
    signed: { type: 'object' },
    signatures: signaturesSchema,
  },
};

export function emptyTargets(): TargetsBody {
  return { _type: TARGETS_TYPE, specVersion: TARGETS_SPEC_VERSION, version: 1, expires: '', packages: [] };
}

export function assertTargetsBody(value: unknown, what = 'targets document'): TargetsBody {
  const errors = validate(targetsBodySchema, value);
  if (errors.length > 0) throw new MnnEdgeError('ESCHEMA', `Invalid ${what}: ${formatSchemaErrors(errors)}`);
  const body = value as TargetsBody;
  if (parseIsoUtc(body.expires) === undefined)
    throw new MnnEdgeError(
      'ESCHEMA',
      `Invalid ${what}: expires ${JSON.stringify(body.expires)} is not a valid time`,
    );
  const seen = new Set<string>();
  for (const p of body.packages) {
    const key = `${p.id}@${p.version}`;
    if (seen.has(key)) throw new MnnEdgeError('ESCHEMA', `Invalid ${what}: package ${key} is listed twice`);
    seen.add(key);
    const variants = new Set<string>();
    for (const a of p.artifacts) {
      if (variants.has(a.variant)) {
        throw new MnnEdgeError('ESCHEMA', `Invalid ${what}: package ${key} has variant ${a.variant} twice`);
      }
      variants.add(a.variant);
    }
  }
  return body;
}

/** Adds or replaces one package's artifact (by variant), keeping the rest of the document. */
export function upsertArtifact(
  body: TargetsBody,
  id: string,
  version: string,
  artifact: Artifact,
): TargetsBody {
  const packages = body.packages.map((p) => ({ ...p, artifacts: [...p.artifacts] }));
  let pkg = packages.find((p) => p.id === id && p.version === version);
  if (!pkg) {
    pkg = { id, version, artifacts: [] };
    packages.push(pkg);
  }
  pkg.artifacts = [...pkg.artifacts.filter((a) => a.variant !== artifact.variant), artifact];
  return { ...body, packages };
}

/** Digest of the canonical signed part: identifies a document independent of its signatures. */
export function targetsDigest(body: unknown): string {
  return createHash('sha256').update(canonicalBytes(body)).digest('hex');
}

/**
 * Signs `body` with each key. Signatures already on `existing` stay when they cover the same content, so holders
 * of different keys can sign one after another to reach a threshold.
 */
export function signTargets(body: TargetsBody, keys: SigningKey[], existing?: SignedTargets): SignedTargets {
  assertTargetsBody(body);
  const bytes = canonicalBytes(body);
  const kept =
    existing && targetsDigest(existing.signed) === targetsDigest(body)
      ? existing.signatures.filter((s) => !keys.some((k) => k.keyId === s.keyid))
      : [];
  return {
    signed: body,
    signatures: [...kept, ...keys.map((k) => ({ keyid: k.keyId, sig: signBytes(k.key, bytes) }))],
  };
}

export interface DeviceFacts {
  deviceId: string;
  tags: readonly string[];
  arch: string;
}

function selected(sel: Selectors | undefined, facts: DeviceFacts): boolean {
  if (!sel) return true;
  if (sel.deviceIds && !sel.deviceIds.includes(facts.deviceId)) return false;
  if (sel.tags && !sel.tags.some((t) => facts.tags.includes(t))) return false;
  if (sel.arch && !sel.arch.includes(facts.arch)) return false;
  return true;
}

export interface SelectedTarget {
  pkg: TargetPackage;
  artifact: Artifact;
}

/** The artifact this device should install for `id@version`, or a sentence saying why there is none. */
export function selectTarget(
  body: TargetsBody,
  id: string,
  version: string,
  facts: DeviceFacts,
  variant?: string,
): SelectedTarget | string {
  const pkg = body.packages.find((p) => p.id === id && p.version === version);
  if (!pkg) return `package ${id}@${version} is not in targets version ${body.version}`;
  if (!selected(pkg.selectors, facts))
    return `package ${id}@${version} does not select device ${facts.deviceId}`;
  const candidates = pkg.artifacts.filter(
    (a) => (variant === undefined || a.variant === variant) && selected(a.selectors, facts),
  );
  const artifact = candidates[0];
  if (!artifact) {
    return variant === undefined
      ? `package ${id}@${version} has no artifact for arch ${facts.arch}`
      : `package ${id}@${version} has no variant ${variant} for this device`;
  }
  return { pkg, artifact };
}
