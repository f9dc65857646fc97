import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import { GPU_CACHE_DIR, modelGpuCacheDir, safeSegment } from '../../../models/store/gpu-cache-layout.js';

// GPU kernel/pipeline caches (MNN's mnn_cachefile.bin) under the data directory, one directory per
// (model version, variant, backend, MNN version). MNN writes the file into the LLM's tmp_path, or into the
// process's working directory when tmp_path is empty, where two Vulkan models would share and clobber one file.
// MNN writes the cache when the model's runtime is destroyed; a host killed mid-write leaves a truncated file, so
// each finished cache is sealed with its size and digest, and a file that does not match its seal is dropped.

export const MNN_CACHE_FILE = 'mnn_cachefile.bin';
const SEAL_FILE = 'seal.json';

export interface GpuCacheKey {
  modelId: string;
  version: string;
  variantId: string;
  backend: string;
  mnnVersion: string;
}

export type GpuCacheState =
  /** No cache for this key yet: MNN compiles its kernels during this load and writes the file at unload. */
  | 'cold'
  /** A sealed cache is present: MNN reuses it. */
  | 'warm'
  /** The directory cannot be written: the model runs without a cache (every load compiles). */
  | 'disabled';

export interface PreparedGpuCache {
  dir: string;
  state: GpuCacheState;
  /** Said once per key when the cache is disabled or was dropped. */
  note?: string;
}

interface Seal {
  size: number;
  sha256: string;
  key: GpuCacheKey;
}

const safe = safeSegment;

/** Only GPU-like backends compile kernels into a cache; the CPU never writes one. */
export function usesGpuCache(backend: string): boolean {
  return backend === 'vulkan' || backend === 'opencl' || backend === 'metal' || backend === 'cuda';
}

export function gpuCacheDir(dataDir: string, key: GpuCacheKey): string {
  return join(
    modelGpuCacheDir(dataDir, { id: key.modelId, version: key.version }),
    safe(key.variantId),
    safe(key.backend),
    `mnn-${safe(key.mnnVersion)}`,
  );
}

function digest(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

export class GpuCacheStore {
  readonly #dataDir: string;
  readonly #log: Logger;
  readonly #said = new Set<string>();

  constructor(dataDir: string, log: Logger) {
    this.#dataDir = dataDir;
    this.#log = log.child('gpu-cache');
  }

  #once(dir: string, level: 'info' | 'warn', message: string, fields: Record<string, unknown>): void {
    const key = `${dir}|${message}`;
    if (this.#said.has(key)) return;
    this.#said.add(key);
    this.#log[level](message, { dir, ...fields });
  }

  /** The directory to hand MNN as tmp_path, made ready: stale caches of other MNN versions of this key are
   *  removed, an unsealed or mismatching file is dropped (logged once), an unwritable directory disables it. */
  prepare(key: GpuCacheKey): PreparedGpuCache {
    const dir = gpuCacheDir(this.#dataDir, key);
    this.#dropOtherMnnVersions(dir, key);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      accessSync(dir, constants.W_OK);
    } catch (err) {
      const note = `GPU cache directory ${dir} is not writable (${errorMessage(err)}): ${key.modelId}@${key.version} runs on ${key.backend} without a kernel cache, so every load compiles its kernels`;
      this.#once(dir, 'warn', 'GPU cache disabled', { reason: note });
      return { dir, state: 'disabled', note };
    }
    const file = join(dir, MNN_CACHE_FILE);
    if (!existsSync(file)) return { dir, state: 'cold' };
    const seal = this.#readSeal(dir);
    let problem: string | undefined;
    try {
      const size = statSync(file).size;
      if (!seal) problem = `no seal (a host stopped before MNN finished writing it)`;
      else if (seal.size !== size)
        problem = `${size} bytes, sealed at ${seal.size} (truncated or overwritten)`;
      else if (seal.sha256 !== digest(file)) problem = `content differs from its seal (corrupt)`;
    } catch (err) {
      problem = `unreadable (${errorMessage(err)})`;
    }
    if (!problem) return { dir, state: 'warm' };
    rmSync(file, { force: true });
    rmSync(join(dir, SEAL_FILE), { force: true });
    const note = `GPU cache ${file} ignored and rebuilt: ${problem}`;
    this.#once(dir, 'warn', 'GPU cache dropped', { reason: note });
    return { dir, state: 'cold', note };
  }

  /** After the host unloaded the model (MNN wrote the file then): seal what is there. */
  seal(key: GpuCacheKey): void {
    const dir = gpuCacheDir(this.#dataDir, key);
    const file = join(dir, MNN_CACHE_FILE);
    try {
      if (!existsSync(file)) return;
      const seal: Seal = { size: statSync(file).size, sha256: digest(file), key };
      writeFileSync(join(dir, SEAL_FILE), JSON.stringify(seal));
    } catch (err) {
      this.#once(dir, 'warn', 'GPU cache not sealed', { error: errorMessage(err) });
    }
  }

  #readSeal(dir: string): Seal | undefined {
    try {
      const s = JSON.parse(readFileSync(join(dir, SEAL_FILE), 'utf8')) as Partial<Seal>;
      return typeof s.size === 'number' && typeof s.sha256 === 'string' ? (s as Seal) : undefined;
    } catch {
      return undefined;
    }
  }

  /** A cache made by another MNN version is useless to this one (kernels and formats change): remove it. */
  #dropOtherMnnVersions(dir: string, key: GpuCacheKey): void {
    const parent = join(dir, '..');
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      return;
    }
    const mine = `mnn-${safe(key.mnnVersion)}`;
    for (const n of names) {
      if (n === mine || !n.startsWith('mnn-')) continue;
      rmSync(join(parent, n), { recursive: true, force: true });
      this.#once(join(parent, n), 'info', 'GPU cache of another MNN version removed', {
        now: key.mnnVersion,
      });
    }
  }

  /** Remove caches of model versions no longer installed (after a store GC or an uninstall). */
  prune(installed: ReadonlyArray<{ id: string; version: string }>): void {
    const root = join(this.#dataDir, GPU_CACHE_DIR);
    const keep = new Set(installed.map((r) => `${safe(r.id)}/${safe(r.version)}`));
    let ids: string[];
    try {
      ids = readdirSync(root);
    } catch {
      return;
    }
    for (const id of ids) {
      let versions: string[];
      try {
        versions = readdirSync(join(root, id));
      } catch {
        continue;
      }
      for (const v of versions)
        if (!keep.has(`${id}/${v}`)) rmSync(join(root, id, v), { recursive: true, force: true });
    }
  }
}
