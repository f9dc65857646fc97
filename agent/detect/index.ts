// Public surface of agent/detect.

export * from '../../lib/capabilities.js';
export type { EngineBackendProbe } from './backends.js';
export { readCapabilitiesCache, writeCapabilitiesCache } from './cache.js';
export { applyEngineBackends, type DetectOptions, detect } from './detect.js';
export type { GpuLoaderEnv } from './gpu-chain.js';
export { formatReport } from './report.js';
export type { FileAccess } from './root-fs.js';
export { capabilitiesSchema } from './schema.js';
