// Public surface of models/: the package manifest, the store and catalog, archive safety, the .mnn inspector.
export { resolveLinkTarget, safePackagePath } from './archive/package-path.js';
export { DEFAULT_STAGE_LIMITS, listPackageDir, stageFromDir, stageFromTar } from './archive/stage-package.js';
export { readTar, tarChunksFromFile } from './archive/tar-reader.js';
export { writeTar } from './archive/tar-writer.js';
export { backendGaps, inspectMnnBytes, inspectMnnFile } from './inspect/inspect-mnn.js';
export { MNN_COMMIT as OP_COVERAGE_MNN_COMMIT } from './inspect/op-coverage.generated.js';
export { deriveManifest, hashFile } from './manifest/derive.js';
export { compareSemver, modelManifestSchema, packageFiles, parseManifest } from './manifest/schema.js';
export { ENGINE_FEATURES, HUB_NAMES, MANIFEST_FILE, MNN_BACKENDS, MODEL_TASKS } from './manifest/types.js';
export { modelsMigration } from './store/migration.js';
export { ModelCatalog } from './store/model-catalog.js';
export { formatRef, ModelStore, parseRef } from './store/model-store.js';
//# sourceMappingURL=index.js.map