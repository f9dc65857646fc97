import { MnnEdgeError } from '../../lib/errors.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../lib/schema.js';
import {
  ENGINE_FEATURES,
  HUB_NAMES,
  MANIFEST_SCHEMA_VERSION,
  MNN_BACKENDS,
  MODEL_TASKS,
  type ModelManifest,
} from './types.js';

export const MODEL_ID_PATTERN = '^[a-z0-9][a-z0-9._-]{0,63}$';
// Semantic Versioning 2.0.0 (without build metadata: it cannot order versions and would only confuse GC).
export const SEMVER_PATTERN =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$';
// Relative, '/'-separated, no empty, '.' or '..' segment, no leading '/'.
export const PACKAGE_PATH_PATTERN = '^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_.+@-][A-Za-z0-9_.+@/-]{0,254}$';

const fileEntrySchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'length', 'sha256'],
  properties: {
    path: { type: 'string', pattern: PACKAGE_PATH_PATTERN, description: 'Relative to the package root.' },
    length: { type: 'integer', minimum: 0 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
};

const requirementsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['backend'],
  properties: {
    backend: { enum: MNN_BACKENDS, description: 'MNN forward type.' },
    minHexagonArch: { type: 'integer', minimum: 60, description: 'e.g. 73 for Hexagon v73.' },
    minCudaComputeCapability: { type: 'string', pattern: '^\\d+\\.\\d+$' },
    cpuFeatures: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9_.]{1,32}$' } },
    minRamBytes: { type: 'integer', minimum: 0 },
    minMnnVersion: { type: 'string', pattern: SEMVER_PATTERN },
    engineFeatures: { type: 'array', items: { enum: ENGINE_FEATURES } },
  },
};

const variantSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'requirements', 'precision', 'files', 'memory'],
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' },
    requirements: requirementsSchema,
    precision: {
      type: 'object',
      additionalProperties: false,
      required: ['weights', 'activations'],
      properties: {
        weights: { type: 'string', pattern: '^[a-z0-9]{2,16}$' },
        activations: { type: 'string', pattern: '^[a-z0-9]{2,16}$' },
        quantBlock: { type: 'integer', minimum: 0 },
        symmetric: { type: 'boolean' },
        label: { type: 'string', maxLength: 32 },
      },
    },
    files: { type: 'array', minItems: 1, items: fileEntrySchema },
    memory: {
      type: 'object',
      additionalProperties: false,
      required: ['weightsBytes'],
      properties: {
        weightsBytes: { type: 'integer', minimum: 0 },
        kvCacheBytes: { type: 'integer', minimum: 0 },
        contextLength: { type: 'integer', minimum: 1 },
      },
    },
    configOverrides: {
      type: 'object',
      description: "MNN config keys merged over the package's config.json.",
    },
  },
};

export const modelManifestSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/model-package.json',
  title: 'mnn-edge model package manifest (mnn-edge.json)',
  type: 'object',
  additionalProperties: false,
  required: ['schemaVersion', 'id', 'version', 'task', 'variants'],
  properties: {
    schemaVersion: { const: MANIFEST_SCHEMA_VERSION },
    id: { type: 'string', pattern: MODEL_ID_PATTERN },
    version: { type: 'string', pattern: SEMVER_PATTERN },
    task: { enum: MODEL_TASKS },
    family: { type: 'string', maxLength: 64 },
    license: { type: 'string', maxLength: 64, description: 'SPDX identifier.' },
    description: { type: 'string', maxLength: 1000 },
    source: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: 'string' },
        upstream: { type: 'string' },
        converter: { type: 'string' },
      },
    },
    derived: {
      type: 'object',
      additionalProperties: false,
      required: ['from', 'assumptions'],
      properties: {
        from: { const: 'mnn-export' },
        assumptions: { type: 'array', items: { type: 'string' } },
      },
    },
    provenance: {
      type: 'object',
      additionalProperties: false,
      description: 'Set on packages pulled from a model hub: unsigned, trusted on first use.',
      required: ['hub', 'repo', 'revision', 'commit', 'endpoint', 'pulledAt', 'trust', 'files'],
      properties: {
        hub: { enum: HUB_NAMES },
        repo: {
          type: 'string',
          pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$',
        },
        revision: { type: 'string', minLength: 1, maxLength: 256 },
        commit: { type: 'string', pattern: '^[0-9a-f]{7,64}$' },
        endpoint: { type: 'string', maxLength: 512 },
        pulledAt: { type: 'string', maxLength: 64 },
        trust: { const: 'unsigned-tofu' },
        files: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'sha256', 'check'],
            properties: {
              path: { type: 'string', pattern: PACKAGE_PATH_PATTERN },
              sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              check: { enum: ['hub-sha256', 'git-blob-sha1', 'computed'] },
              gitOid: { type: 'string', pattern: '^[0-9a-f]{40}$' },
            },
          },
        },
      },
    },
    variants: { type: 'array', minItems: 1, items: variantSchema },
  },
};

/** Schema check plus the rules a schema cannot say: unique variant names, one length/hash per path. */
export function parseManifest(raw: unknown, source: string): ModelManifest {
  const errors = validate(modelManifestSchema, raw);
  if (errors.length > 0)
    throw new MnnEdgeError('EMANIFEST', `Invalid manifest ${source}: ${formatSchemaErrors(errors)}`, {
      source,
      errors,
    });
  const manifest = raw as ModelManifest;
  const names = new Set<string>();
  const files = new Map<string, string>();
  for (const [i, v] of manifest.variants.entries()) {
    if (names.has(v.name))
      throw new MnnEdgeError(
        'EMANIFEST',
        `Invalid manifest ${source}: variants[${i}].name: duplicate variant "${v.name}"`,
      );
    names.add(v.name);
    for (const f of v.files) {
      const key = `${f.length}:${f.sha256}`;
      const seen = files.get(f.path);
      if (seen !== undefined && seen !== key)
        throw new MnnEdgeError(
          'EMANIFEST',
          `Invalid manifest ${source}: file ${f.path} is listed with different lengths or hashes`,
        );
      files.set(f.path, key);
    }
  }
  return manifest;
}

/** Every file of the package once, in a stable order. */
export function packageFiles(manifest: ModelManifest): Map<string, { length: number; sha256: string }> {
  const out = new Map<string, { length: number; sha256: string }>();
  for (const v of manifest.variants)
    for (const f of v.files) out.set(f.path, { length: f.length, sha256: f.sha256 });
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function compareSemver(a: string, b: string): number {
  const parse = (v: string) => {
    const dash = v.indexOf('-');
    const core = dash === -1 ? v : v.slice(0, dash);
    return { nums: core.split('.').map(Number), pre: dash === -1 ? undefined : v.slice(dash + 1) };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}
