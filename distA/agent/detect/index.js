// Public surface of agent/detect.
export { readCapabilitiesCache, writeCapabilitiesCache } from './cache.js';
export { applyEngineBackends, detect } from './detect.js';
export { formatReport } from './report.js';
export { capabilitiesSchema } from './schema.js';
export * from './types.js';
//# sourceMappingURL=index.js.map