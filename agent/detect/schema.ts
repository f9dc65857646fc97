import { MNN_BACKENDS } from '../../lib/capabilities.js';
import type { JsonSchema } from '../../lib/schema.js';

// JSON Schema of the Capabilities document (exported to docs/schemas/capabilities.schema.json by
// scripts/export-schemas/capabilities.ts). Kept beside types.ts: change both together.

const evidence: JsonSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'path', 'value'],
      properties: { kind: { const: 'file' }, path: { type: 'string' }, value: { type: 'string' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'path'],
      properties: { kind: { const: 'missing' }, path: { type: 'string' }, detail: { type: 'string' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'path', 'error'],
      properties: { kind: { const: 'unreadable' }, path: { type: 'string' }, error: { type: 'string' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'path', 'present', 'via'],
      properties: {
        kind: { const: 'node' },
        path: { type: 'string' },
        present: { type: 'boolean' },
        via: { enum: ['stat', 'present.txt'] },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'key', 'profile'],
      properties: {
        kind: { const: 'table' },
        key: { type: 'string' },
        profile: { type: 'string' },
        note: { type: 'string' },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'rule'],
      properties: { kind: { const: 'inferred' }, rule: { type: 'string' } },
    },
  ],
};

function claim(value: JsonSchema): JsonSchema {
  const types = Array.isArray(value.type) ? value.type : value.type ? [value.type] : [];
  const nullable: JsonSchema = value.type
    ? { ...value, type: [...types, 'null'] }
    : { anyOf: [value, { type: 'null' }] };
  if (value.enum) nullable.enum = [...value.enum, null];
  return {
    type: 'object',
    additionalProperties: false,
    required: ['value', 'evidence'],
    properties: { value: nullable, evidence: { type: 'array', items: evidence } },
  };
}

const str = claim({ type: 'string' });
const bool = claim({ type: 'boolean' });
const int = claim({ type: 'integer', minimum: 0 });
const strings: JsonSchema = { type: 'array', items: { type: 'string' } };
const evidenceList: JsonSchema = { type: 'array', items: evidence };

const featureNames = [
  'fp16',
  'dotprod',
  'i8mm',
  'bf16',
  'sve',
  'sve2',
  'sme',
  'sme2',
  'rvv',
  'ime',
  'ime2',
  'avx2',
  'avx512f',
  'avx512vnni',
  'avx512bf16',
  'avxVnni',
];

const accBase = { deviceNodes: strings, libraries: strings, evidence: evidenceList };
const accRequired = ['kind', 'deviceNodes', 'libraries', 'evidence'];

export const capabilitiesSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://mnn-edge.dev/schemas/capabilities.json',
  title: 'mnn-edge capability document',
  description:
    'What agent/detect found on a board; every claim carries its evidence, null values are unknowns.',
  type: 'object',
  additionalProperties: false,
  required: [
    'schemaVersion',
    'root',
    'detectedAt',
    'board',
    'soc',
    'cpu',
    'memory',
    'accelerators',
    'thermal',
    'backends',
    'engineBackends',
  ],
  properties: {
    schemaVersion: { const: 1 },
    root: { type: 'string', minLength: 1 },
    detectedAt: { type: 'string', format: 'date-time' },
    board: {
      type: 'object',
      additionalProperties: false,
      required: ['vendor', 'model', 'compatible'],
      properties: { vendor: str, model: str, compatible: claim(strings) },
    },
    soc: {
      type: 'object',
      additionalProperties: false,
      required: ['family', 'vendor', 'name', 'socId', 'revision'],
      properties: {
        family: claim({
          type: 'string',
          enum: [
            'qcs9075',
            'qcs6490',
            'rk3588',
            'jetson-orin',
            'spacemit-k1',
            'spacemit-k3',
            'riscv-generic',
            'arm64-generic',
            'x86-64',
          ],
        }),
        vendor: str,
        name: str,
        socId: str,
        revision: str,
      },
    },
    cpu: {
      type: 'object',
      additionalProperties: false,
      required: ['architecture', 'logicalCpus', 'clusters', 'model', 'features'],
      properties: {
        architecture: claim({ type: 'string', enum: ['aarch64', 'riscv64', 'x86_64', 'armv7', 'unknown'] }),
        logicalCpus: int,
        clusters: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['cpus', 'coreCount', 'core', 'maxFreqKHz', 'evidence'],
            properties: {
              cpus: { type: 'array', items: { type: 'integer', minimum: 0 } },
              coreCount: { type: 'integer', minimum: 1 },
              core: { type: ['string', 'null'] },
              maxFreqKHz: { type: ['integer', 'null'] },
              evidence: evidenceList,
            },
          },
        },
        model: str,
        features: {
          type: 'object',
          additionalProperties: false,
          required: [...featureNames, 'rvvVlen'],
          properties: {
            ...Object.fromEntries(featureNames.map((n) => [n, bool])),
            rvvVlen: int,
          },
        },
      },
    },
    memory: {
      type: 'object',
      additionalProperties: false,
      required: ['totalBytes', 'availableBytes', 'pageSize'],
      properties: { totalBytes: int, availableBytes: int, pageSize: int },
    },
    accelerators: {
      type: 'array',
      items: {
        oneOf: [
          {
            type: 'object',
            additionalProperties: false,
            required: [...accRequired, 'arch', 'nspCount', 'fastrpcNodes', 'qnnLibraries'],
            properties: {
              kind: { const: 'hexagon-htp' },
              ...accBase,
              arch: str,
              nspCount: int,
              fastrpcNodes: strings,
              qnnLibraries: strings,
            },
          },
          {
            type: 'object',
            additionalProperties: false,
            required: [...accRequired, 'driver', 'driverVersion', 'cores', 'deviceNode'],
            properties: {
              kind: { const: 'rknpu' },
              ...accBase,
              driver: claim({ type: 'string', enum: ['rknpu-vendor', 'rocket-mainline'] }),
              driverVersion: str,
              cores: int,
              deviceNode: str,
            },
          },
          {
            type: 'object',
            additionalProperties: false,
            required: [...accRequired, 'name', 'computeCapability', 'l4tRelease', 'jetpack', 'dlaCount'],
            properties: {
              kind: { const: 'nvidia-gpu' },
              ...accBase,
              name: str,
              computeCapability: str,
              l4tRelease: str,
              jetpack: str,
              dlaCount: int,
            },
          },
          {
            type: 'object',
            additionalProperties: false,
            required: [...accRequired, 'vendor', 'name', 'openclLibraries', 'vulkanLibraries'],
            properties: {
              kind: { const: 'gpu' },
              ...accBase,
              vendor: { enum: ['arm-mali', 'qualcomm-adreno', 'broadcom-v3d', 'imagination', 'unknown'] },
              name: str,
              openclLibraries: strings,
              vulkanLibraries: strings,
            },
          },
          {
            type: 'object',
            additionalProperties: false,
            required: [...accRequired, 'aiThreadGate'],
            properties: { kind: { const: 'spacemit-ai' }, ...accBase, aiThreadGate: bool },
          },
        ],
      },
    },
    thermal: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['zone', 'type', 'tempMilliC'],
        properties: {
          zone: { type: 'string' },
          type: { type: ['string', 'null'] },
          tempMilliC: claim({ type: 'integer' }),
        },
      },
    },
    backends: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['backend', 'usable', 'reasons'],
        properties: {
          backend: { enum: [...MNN_BACKENDS] },
          usable: { type: 'boolean' },
          reasons: { type: 'array', minItems: 1, items: { type: 'string' } },
          steps: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['step', 'status', 'detail', 'evidence'],
              properties: {
                step: { enum: ['device-node', 'icd', 'loader', 'device-kind', 'compiled-in', 'init-probe'] },
                status: { enum: ['ok', 'fail', 'skip', 'unchecked'] },
                detail: { type: 'string' },
                evidence: { type: 'array', items: evidence },
              },
            },
          },
          deviceKind: { enum: ['gpu', 'software', 'unknown'] },
        },
      },
    },
    engineBackends: { type: ['array', 'null'], items: { type: 'string' } },
    // The retained MQTT `capabilities` document is this document plus what the agent adds when publishing it.
    agentVersion: {
      type: 'string',
      maxLength: 64,
      description: 'Added by the agent in the retained MQTT capabilities document: its version.',
    },
    engine: {
      description:
        'Added by the agent in the retained MQTT capabilities document: whether the MNN engine loaded.',
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['available', 'mnnVersion'],
          properties: { available: { const: true }, mnnVersion: { type: 'string' } },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['available', 'reason'],
          properties: { available: { const: false }, reason: { type: 'string' } },
        },
      ],
    },
  },
};
