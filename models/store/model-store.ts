import { randomUUID } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join, sep } from 'node:path';
import { type Clock, systemClock } from '../../lib/clock.js';
import { fsyncDir, renameDurable, writeFileDurable } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import type { Logger } from '../../lib/log.js';
import type { Db } from '../../lib/sqlite/database.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import {
  type StageLimits,
  type StageProgress,
  stageFromDir,
  stageFromTar,
} from '../archive/stage-package.js';
import { compareSemver } from '../manifest/schema.js';
import { MANIFEST_FILE, type ModelManifest, type ModelTask } from '../manifest/types.js';
import { gpuCacheBytes, removeGpuCaches } from './gpu-cache-layout.js';
import { manifestFor } from './staged-manifest.js';
import { currentBootId, readLock, takeLock } from './store-lock.js';
import {
  formatRef,
  type GcReport,
  type ImportOptions,
  type InstalledPackage,
  type ModelRef,
  type ModelStoreEvents,
  type ModelStoreOptions,
  type RecoveryReport,
} from './store-types.js';

export {
  formatRef,
  type GcReport,
  type ImportOptions,
  type ImportProgress,
  type ImportStep,
  type InstalledPackage,
  type ModelRef,
  type ModelStoreEvents,
  type ModelStoreOptions,
  parseRef,
  type RecoveryReport,
} from './store-types.js';

// The on-disk model store: <dataDir>/models/<id>/<version>/ holds a verified package, SQLite holds the
// inventory. Durability rule: a package directory exists under its final name only while its row exists,
// except inside a journalled step, and startup recovery finishes or undoes every journalled step.

interface PackageRow {
  id: string;
  version: string;
  task: string;
  manifest: string;
  derived: number;
  size_bytes: number;
  installed_at: number;
  last_used_at: number | null;
  in_use: number;
  kept: number;
  rollback_hold: number;
}

interface JournalRow {
  work_dir: string;
  op: 'install' | 'remove';
  id: string | null;
  version: string | null;
}

const STAGING = '.staging';
const TRASH = '.trash';
const LOCK = '.lock';
const _MAX_MANIFEST_BYTES = INPUT_LIMITS.manifestMaxBytes;

export class ModelStore extends TypedEventEmitter<ModelStoreEvents> {
  readonly root: string;
  readonly #db: Db;
  readonly #dataDir: string;
  readonly #clock: Clock;
  readonly #log: Logger | undefined;
  readonly #limits: Partial<StageLimits>;
  readonly #installing = new Set<string>();
  readonly #bootId: string | undefined;
  #ownsLock = false;

  private constructor(options: ModelStoreOptions) {
    super();
    this.root = join(options.dataDir, 'models');
    this.#dataDir = options.dataDir;
    this.#db = options.db;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log;
    this.#limits = options.limits ?? {};
    this.#bootId = options.bootId ?? currentBootId();
  }

  /**
   * Opens the store and, unless another live process holds it (the agent while the CLI runs), takes it over
   * and runs recovery, so callers never see a half-installed package.
   */
  static open(options: ModelStoreOptions): { store: ModelStore; recovery: RecoveryReport } {
    const store = new ModelStore(options);
    mkdirSync(join(store.root, STAGING), { recursive: true });
    mkdirSync(join(store.root, TRASH), { recursive: true });
    const holder = store.#takeLock();
    if (holder !== undefined)
      return {
        store,
        recovery: {
          skipped: `held by process ${holder}`,
          rolledBack: [],
          orphansRemoved: [],
          missingDropped: [],
        },
      };
    return { store, recovery: store.recover() };
  }

  /** Releases the store for the next process to recover. Idempotent. */
  close(): void {
    if (!this.#ownsLock) return;
    this.#ownsLock = false;
    const path = join(this.root, LOCK);
    if (readLock(path)?.pid === process.pid) rmSync(path, { force: true });
  }

  /** A pid file naming its boot (store-lock.ts): a dead pid, or one of another boot, means the lock is free. */
  #takeLock(): number | undefined {
    const holder = takeLock(join(this.root, LOCK), this.#bootId);
    if (holder === undefined) this.#ownsLock = true;
    return holder;
  }

  packageDir(ref: ModelRef): string {
    return join(this.root, ref.id, ref.version);
  }

  recover(): RecoveryReport {
    const report: RecoveryReport = { rolledBack: [], orphansRemoved: [], missingDropped: [] };
    const journal = this.#db
      .prepare('SELECT work_dir, op, id, version FROM model_journal')
      .all() as JournalRow[];
    for (const j of journal) {
      const ref = j.id !== null && j.version !== null ? { id: j.id, version: j.version } : undefined;
      // Journal paths come from our own writes, but a database restored from elsewhere must not make us
      // delete outside the store.
      if (
        j.work_dir.startsWith(join(this.root, STAGING) + sep) ||
        j.work_dir.startsWith(join(this.root, TRASH) + sep)
      )
        rmSync(j.work_dir, { recursive: true, force: true });
      if (j.op === 'install' && ref && !this.#row(ref) && existsSync(this.packageDir(ref))) {
        // Renamed into place but the row never committed: the install did not happen.
        rmSync(this.packageDir(ref), { recursive: true, force: true });
      }
      if (j.op === 'remove' && ref && !this.#row(ref))
        rmSync(this.packageDir(ref), { recursive: true, force: true });
      this.#db.prepare('DELETE FROM model_journal WHERE work_dir = ?').run(j.work_dir);
      report.rolledBack.push(`${j.op} ${ref ? formatRef(ref) : basename(j.work_dir)}`);
    }
    for (const dir of [STAGING, TRASH]) {
      for (const name of readdirSync(join(this.root, dir))) {
        rmSync(join(this.root, dir, name), { recursive: true, force: true });
        report.orphansRemoved.push(`${dir}/${name}`);
      }
    }
    const rows = this.#rows();
    const listed = new Set(rows.map((r) => `${r.id}/${r.version}`));
    for (const id of readdirSync(this.root)) {
      if (id === STAGING || id === TRASH || id === LOCK) continue;
      const idDir = join(this.root, id);
      if (!lstatSync(idDir).isDirectory()) {
        rmSync(idDir, { force: true });
        report.orphansRemoved.push(id);
        continue;
      }
      for (const version of readdirSync(idDir)) {
        if (listed.has(`${id}/${version}`)) continue;
        rmSync(join(idDir, version), { recursive: true, force: true });
        report.orphansRemoved.push(`${id}/${version}`);
      }
      if (readdirSync(idDir).length === 0) rmSync(idDir, { recursive: true, force: true });
    }
    for (const r of rows) {
      if (existsSync(join(this.packageDir(r), MANIFEST_FILE))) continue;
      this.#db.prepare('DELETE FROM model_packages WHERE id = ? AND version = ?').run(r.id, r.version);
      report.missingDropped.push(formatRef(r));
    }
    fsyncDir(this.root);
    const touched = report.rolledBack.length + report.orphansRemoved.length + report.missingDropped.length;
    if (touched > 0) this.#log?.warn('model store recovered', { ...report });
    return report;
  }

  async import(source: string, options: ImportOptions = {}): Promise<InstalledPackage> {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(source);
    } catch (err) {
      throw new MnnEdgeError('ENOENT', `Cannot import ${source}: ${(err as Error).message}`);
    }
    const work = join(this.root, STAGING, randomUUID());
    let claimed: string | undefined;
    let published: ModelRef | undefined;
    this.#db
      .prepare(
        'INSERT INTO model_journal (work_dir, op, id, version, started_at) VALUES (?, ?, NULL, NULL, ?)',
      )
      .run(work, 'install', this.#clock.nowMs());
    try {
      mkdirSync(work);
      const stageOptions = {
        limits: this.#limits,
        onProgress: (p: StageProgress) => this.emit('progress', { ...p, source }),
        afterFile: (path: string) => options.checkpoint?.('staged-file', path),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.consumeSource ? { consumeSource: options.consumeSource } : {}),
        ...(options.manifestFirst ? { manifestFirst: true } : {}),
        ...(options.headroomBytes !== undefined ? { headroomBytes: options.headroomBytes } : {}),
      };
      const files = st.isDirectory()
        ? await stageFromDir(source, work, stageOptions)
        : await stageFromTar(source, work, stageOptions);
      const manifest = manifestFor(work, files, source, options);
      const ref = { id: manifest.id, version: manifest.version };
      if (this.#row(ref)) throw new MnnEdgeError('EEXIST', `${formatRef(ref)} is already installed`);
      // Two imports of one version in this process would race for the same final directory.
      if (this.#installing.has(formatRef(ref)))
        throw new MnnEdgeError('EBUSY', `${formatRef(ref)} is being installed by another import`);
      claimed = formatRef(ref);
      this.#installing.add(claimed);
      // A publisher's manifest stays byte for byte (it may be signed); a derived one is written out.
      if (!existsSync(join(work, MANIFEST_FILE)))
        writeFileDurable(join(work, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
      await options.checkpoint?.('staged', formatRef(ref));
      const sizeBytes = files.filter((f) => f.path !== MANIFEST_FILE).reduce((a, f) => a + f.length, 0);
      this.#db
        .prepare('UPDATE model_journal SET id = ?, version = ? WHERE work_dir = ?')
        .run(ref.id, ref.version, work);
      mkdirSync(join(this.root, ref.id), { recursive: true });
      fsyncDir(this.root);
      renameDurable(work, this.packageDir(ref));
      published = ref;
      await options.checkpoint?.('published', formatRef(ref));
      this.#db.transaction(() => {
        this.#db
          .prepare(
            `INSERT INTO model_packages (id, version, task, manifest, derived, size_bytes, installed_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            ref.id,
            ref.version,
            manifest.task,
            JSON.stringify(manifest),
            manifest.derived ? 1 : 0,
            sizeBytes,
            this.#clock.nowMs(),
          );
        this.#db.prepare('DELETE FROM model_journal WHERE work_dir = ?').run(work);
      })();
      await options.checkpoint?.('committed', formatRef(ref));
      this.emit('installed', ref);
      this.#log?.info('model installed', {
        model: formatRef(ref),
        sizeBytes,
        derived: manifest.derived !== undefined,
      });
      return this.get(ref)!;
    } catch (err) {
      this.#undoInstall(work, published);
      throw err;
    } finally {
      if (claimed !== undefined) this.#installing.delete(claimed);
    }
  }

  /** Undoes a failed import in this process; a crashed one is undone by recover() from the journal. */
  #undoInstall(work: string, published: ModelRef | undefined): void {
    rmSync(work, { recursive: true, force: true });
    if (published && !this.#row(published))
      rmSync(this.packageDir(published), { recursive: true, force: true });
    this.#db.prepare('DELETE FROM model_journal WHERE work_dir = ?').run(work);
  }

  list(): InstalledPackage[] {
    return this.#rows()
      .map((r) => this.#toPackage(r))
      .sort((a, b) => (a.id === b.id ? compareSemver(a.version, b.version) : a.id < b.id ? -1 : 1));
  }

  get(ref: ModelRef): InstalledPackage | undefined {
    const r = this.#row(ref);
    return r ? this.#toPackage(r) : undefined;
  }

  /** Newest installed version of a model. */
  latest(id: string): InstalledPackage | undefined {
    return this.list()
      .filter((p) => p.id === id)
      .at(-1);
  }

  /** The runtime's desired state: exactly these versions are in use; the call replaces the previous set. */
  setInUse(refs: readonly ModelRef[]): void {
    this.#replaceFlag('in_use', refs);
  }

  /** OTA's rollback targets: held until the job commits; the call replaces the previous set. */
  setRollbackHold(refs: readonly ModelRef[]): void {
    this.#replaceFlag('rollback_hold', refs);
  }

  keep(ref: ModelRef, kept = true): void {
    this.#require(ref);
    this.#db
      .prepare('UPDATE model_packages SET kept = ? WHERE id = ? AND version = ?')
      .run(kept ? 1 : 0, ref.id, ref.version);
  }

  markUsed(ref: ModelRef): void {
    this.#db
      .prepare('UPDATE model_packages SET last_used_at = ? WHERE id = ? AND version = ?')
      .run(this.#clock.nowMs(), ref.id, ref.version);
  }

  /** Removes one version. In-use and rollback-held versions are refused; kept ones need `force`. */
  remove(ref: ModelRef, options: { force?: boolean } = {}): void {
    const pkg = this.#require(ref);
    if (pkg.inUse)
      throw new MnnEdgeError('EBUSY', `${formatRef(ref)} is in use by the runtime and cannot be removed`);
    if (pkg.rollbackHold)
      throw new MnnEdgeError('EBUSY', `${formatRef(ref)} is held for an OTA rollback and cannot be removed`);
    if (pkg.kept && !options.force)
      throw new MnnEdgeError(
        'EBUSY',
        `${formatRef(ref)} is kept by an operator; unkeep it first or force the removal`,
      );
    const trash = join(this.root, TRASH, randomUUID());
    this.#db.transaction(() => {
      this.#db
        .prepare('INSERT INTO model_journal (work_dir, op, id, version, started_at) VALUES (?, ?, ?, ?, ?)')
        .run(trash, 'remove', ref.id, ref.version, this.#clock.nowMs());
      this.#db.prepare('DELETE FROM model_packages WHERE id = ? AND version = ?').run(ref.id, ref.version);
    })();
    renameDurable(pkg.dir, trash);
    rmSync(trash, { recursive: true, force: true });
    removeGpuCaches(this.#dataDir, ref);
    const idDir = join(this.root, ref.id);
    if (readdirSync(idDir).length === 0) rmSync(idDir, { recursive: true, force: true });
    this.#db.prepare('DELETE FROM model_journal WHERE work_dir = ?').run(trash);
    this.emit('removed', ref);
    this.#log?.info('model removed', { model: formatRef(ref) });
  }

  /**
   * Removes old versions, least recently used first, until the store fits `budgetBytes` (all collectable
   * ones when no budget is given). Never removes a version that is in use, kept, held for rollback, or the
   * newest of its model: dropping a model altogether is an operator's decision (`rm`).
   */
  gc(budgetBytes?: number): GcReport {
    const all = this.list();
    let total = all.reduce((a, p) => a + p.sizeBytes + p.gpuCacheBytes, 0);
    const newest = new Map<string, string>();
    for (const p of all) newest.set(p.id, p.version);
    const candidates = all
      .filter((p) => !p.inUse && !p.kept && !p.rollbackHold && newest.get(p.id) !== p.version)
      .sort((a, b) => (a.lastUsedAt ?? a.installedAt) - (b.lastUsedAt ?? b.installedAt));
    const removed: ModelRef[] = [];
    let freed = 0;
    for (const p of candidates) {
      if (budgetBytes !== undefined && total <= budgetBytes) break;
      this.remove(p);
      removed.push({ id: p.id, version: p.version });
      freed += p.sizeBytes + p.gpuCacheBytes;
      total -= p.sizeBytes + p.gpuCacheBytes;
    }
    return {
      removed,
      freedBytes: freed,
      totalBytes: total,
      overBudgetBytes: budgetBytes !== undefined && total > budgetBytes ? total - budgetBytes : 0,
    };
  }

  #replaceFlag(column: 'in_use' | 'rollback_hold', refs: readonly ModelRef[]): void {
    this.#db.transaction(() => {
      for (const ref of refs) this.#require(ref);
      this.#db.prepare(`UPDATE model_packages SET ${column} = 0`).run();
      const set = this.#db.prepare(`UPDATE model_packages SET ${column} = 1 WHERE id = ? AND version = ?`);
      for (const ref of refs) set.run(ref.id, ref.version);
    })();
  }

  #require(ref: ModelRef): InstalledPackage {
    const pkg = this.get(ref);
    if (!pkg) throw new MnnEdgeError('ENOENT', `Model ${formatRef(ref)} is not installed`);
    return pkg;
  }

  #row(ref: ModelRef): PackageRow | undefined {
    return this.#db
      .prepare('SELECT * FROM model_packages WHERE id = ? AND version = ?')
      .get(ref.id, ref.version) as PackageRow | undefined;
  }

  #rows(): PackageRow[] {
    return this.#db.prepare('SELECT * FROM model_packages').all() as PackageRow[];
  }

  #toPackage(r: PackageRow): InstalledPackage {
    return {
      id: r.id,
      version: r.version,
      task: r.task as ModelTask,
      manifest: JSON.parse(r.manifest) as ModelManifest,
      derived: r.derived === 1,
      sizeBytes: r.size_bytes,
      gpuCacheBytes: gpuCacheBytes(this.#dataDir, r),
      installedAt: r.installed_at,
      lastUsedAt: r.last_used_at,
      inUse: r.in_use === 1,
      kept: r.kept === 1,
      rollbackHold: r.rollback_hold === 1,
      dir: this.packageDir(r),
    };
  }
}
