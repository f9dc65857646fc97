// The model store's vocabulary: a package reference and its text form, what an installed package records,
// import options and progress, and the reports of recovery and garbage collection.
import type { Clock } from '../../lib/clock.js';
import { MnnEdgeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import type { ConsumeSource, StageLimits, StageProgress } from '../archive/stage-package.js';
import { MODEL_ID_PATTERN, SEMVER_PATTERN } from '../manifest/schema.js';
import type { ModelManifest, ModelTask } from '../manifest/types.js';

export interface ModelRef {
  id: string;
  version: string;
}

export interface InstalledPackage extends ModelRef {
  task: ModelTask;
  manifest: ModelManifest;
  derived: boolean;
  sizeBytes: number;
  /** GPU kernel caches the runtime built for this version (under <dataDir>/gpu-cache), counted with it. */
  gpuCacheBytes: number;
  installedAt: number;
  lastUsedAt: number | null;
  inUse: boolean;
  kept: boolean;
  rollbackHold: boolean;
  dir: string;
}

export type ImportStep = 'staged-file' | 'staged' | 'published' | 'committed';

export interface ImportOptions {
  /** For a bare MNN export (no manifest): the id and version to give it; the id defaults to the source name. */
  id?: string;
  version?: string;
  task?: ModelTask;
  signal?: AbortSignal;
  /** A directory source is the caller's scratch space: files are moved in rather than copied (hub pulls), and
   *  the hashes it computed while writing them stand. */
  consumeSource?: ConsumeSource;
  /** Awaited at each step of an import; lets a caller pace or observe it. */
  checkpoint?: (step: ImportStep, detail: string) => Promise<void> | void;
  /**
   * For packages from the network (pull, OTA): the archive must start with its manifest, so that every entry
   * is checked against it before it is written.
   */
  manifestFirst?: boolean;
  /** Space that must stay free after unpacking (checked against the manifest's total). */
  headroomBytes?: number;
}

export interface ImportProgress extends StageProgress {
  source: string;
}

export interface RecoveryReport {
  /** Set when another live process holds the store: its unfinished work is not ours to undo. */
  skipped?: string;
  rolledBack: string[];
  orphansRemoved: string[];
  missingDropped: string[];
}

export interface GcReport {
  removed: ModelRef[];
  freedBytes: number;
  totalBytes: number;
  /** Set when the budget could not be met because the rest is protected. */
  overBudgetBytes: number;
}

export type ModelStoreEvents = {
  progress: ImportProgress;
  installed: ModelRef;
  removed: ModelRef;
};

export interface ModelStoreOptions {
  dataDir: string;
  db: Db;
  clock?: Clock;
  log?: Logger;
  limits?: Partial<StageLimits>;
  /** The boot the lock is taken in (default: the kernel's boot_id); tests name another boot. */
  bootId?: string;
}

export function formatRef(ref: ModelRef): string {
  return `${ref.id}@${ref.version}`;
}

export function parseRef(text: string): ModelRef {
  const at = text.lastIndexOf('@');
  const id = at === -1 ? '' : text.slice(0, at);
  const version = at === -1 ? '' : text.slice(at + 1);
  if (!new RegExp(MODEL_ID_PATTERN).test(id) || !new RegExp(SEMVER_PATTERN).test(version))
    throw new MnnEdgeError(
      'EUSAGE',
      `Expected <id>@<version> (e.g. qwen2.5-0.5b@1.0.0) but received ${JSON.stringify(text)}`,
    );
  return { id, version };
}
