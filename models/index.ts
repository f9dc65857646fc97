// Public surface of models/: the package manifest, the store and catalog, archive safety, the .mnn inspector.

export { resolveLinkTarget, safePackagePath } from './archive/package-path.js';
export type { StagedFile, StageLimits, StageProgress } from './archive/stage-package.js';
export { DEFAULT_STAGE_LIMITS, listPackageDir, stageFromDir, stageFromTar } from './archive/stage-package.js';
export type { TarEntryType } from './archive/tar-format.js';
export type { TarEntry } from './archive/tar-reader.js';
export { readTar, tarChunksFromFile } from './archive/tar-reader.js';
export type { TarWriteEntry } from './archive/tar-writer.js';
export { writeTar } from './archive/tar-writer.js';
export type { ExternalWeights, MnnInspection, MnnTensorInfo } from './inspect/inspect-mnn.js';
export { backendGaps, inspectMnnBytes, inspectMnnFile } from './inspect/inspect-mnn.js';
export { MNN_COMMIT as OP_COVERAGE_MNN_COMMIT } from './inspect/op-coverage.generated.js';
export { deriveManifest, hashFile } from './manifest/derive.js';
export { compareSemver, modelManifestSchema, packageFiles, parseManifest } from './manifest/schema.js';
export type {
  DerivedMarker,
  EngineFeature,
  HubFileCheck,
  HubName,
  HubProvenance,
  HubProvenanceFile,
  ManifestSource,
  MemoryEstimate,
  MnnBackend,
  ModelFileEntry,
  ModelManifest,
  ModelTask,
  ModelVariant,
  VariantPrecision,
  VariantRequirements,
} from './manifest/types.js';
export { ENGINE_FEATURES, HUB_NAMES, MANIFEST_FILE, MNN_BACKENDS, MODEL_TASKS } from './manifest/types.js';
export { modelsMigration } from './store/migration.js';
export type { CatalogVariant } from './store/model-catalog.js';
export { ModelCatalog } from './store/model-catalog.js';
export type {
  GcReport,
  ImportOptions,
  ImportProgress,
  ImportStep,
  InstalledPackage,
  ModelRef,
  ModelStoreEvents,
  ModelStoreOptions,
  RecoveryReport,
} from './store/model-store.js';
export { formatRef, ModelStore, parseRef } from './store/model-store.js';
