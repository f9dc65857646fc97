import type { JsonSchema } from '../lib/schema.js';
import type { StageLimits } from './archive/stage-package.js';

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
  /** Largest package (sum of its files) that import, pull and OTA accept. */
  maxPackageBytes?: number;
  /** Largest single file in a package. */
  maxEntryBytes?: number;
  /** Largest ratio of unpacked to compressed bytes for a .tar.gz (a decompression bomb's signature). */
  maxCompressionRatio?: number;
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
    maxEntryBytes: { type: 'integer', minimum: 1 },
    maxCompressionRatio: { type: 'number', minimum: 1 },
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

/** The store's unpacking limits from configuration: every path that opens the store (import, pull, OTA) uses it. */
export function storeLimitsOf(config: ModelsConfig): Partial<StageLimits> {
  return {
    ...(config.maxPackageBytes !== undefined ? { maxTotalBytes: config.maxPackageBytes } : {}),
    ...(config.maxEntryBytes !== undefined ? { maxEntryBytes: config.maxEntryBytes } : {}),
    ...(config.maxCompressionRatio !== undefined ? { maxCompressionRatio: config.maxCompressionRatio } : {}),
  };
}
