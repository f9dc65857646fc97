import type { JsonSchema } from '../agent/common/schema.js';

/** The `models` section of the agent configuration. */
export interface ModelsConfig {
  /** Disk budget for the model store; `gc` removes old versions until the store fits. */
  diskBudgetBytes?: number;
  /** Largest package `import` accepts. */
  maxPackageBytes?: number;
}

export const modelsConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    diskBudgetBytes: { type: 'integer', minimum: 0 },
    maxPackageBytes: { type: 'integer', minimum: 1 },
  },
};

export function modelsConfigOf(section: unknown): ModelsConfig {
  return typeof section === 'object' && section !== null ? (section as ModelsConfig) : {};
}
