import type { JsonSchema } from '../agent/common/schema.js';

/** One model hub: where its API lives (a mirror, an air-gapped copy) and whose exports `search` lists. */
export interface HubSourceConfig {
  endpoint?: string;
  /** Organisation whose MNN exports search and recommend list by default. */
  owner?: string;
}

/** The `models` section of the agent configuration. */
export interface ModelsConfig {
  /** Disk budget for the model store; `gc` removes old versions until the store fits. */
  diskBudgetBytes?: number;
  /** Largest package `import` accepts. */
  maxPackageBytes?: number;
  /** Hugging Face (`hf`) and ModelScope (`ms`) for `models pull/search/recommend/update`. */
  sources?: {
    hf?: HubSourceConfig;
    ms?: HubSourceConfig;
    /** Lets a hub or its redirects use plain http on this machine's loopback only (local mirrors, tests). */
    allowLoopbackHttp?: boolean;
  };
}

const hubSourceSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    endpoint: { type: 'string', pattern: '^https?://[^\\s]+$' },
    owner: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$' },
  },
};

export const modelsConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    diskBudgetBytes: { type: 'integer', minimum: 0 },
    maxPackageBytes: { type: 'integer', minimum: 1 },
    sources: {
      type: 'object',
      additionalProperties: false,
      properties: {
        hf: hubSourceSchema,
        ms: hubSourceSchema,
        allowLoopbackHttp: { type: 'boolean' },
      },
    },
  },
};

export function modelsConfigOf(section: unknown): ModelsConfig {
  return typeof section === 'object' && section !== null ? (section as ModelsConfig) : {};
}
