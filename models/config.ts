import type { JsonSchema } from '../agent/common/schema.js';
import type { StageLimits } from './archive/stage-package.js';

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
}

export const modelsConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    diskBudgetBytes: { type: 'integer', minimum: 0 },
    maxPackageBytes: { type: 'integer', minimum: 1 },
    maxEntryBytes: { type: 'integer', minimum: 1 },
    maxCompressionRatio: { type: 'number', minimum: 1 },
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
