// The OTA ports over models/' ModelStore: installing goes through the store's import (archive safety checks,
// manifest hash verification, crash-safe publish), and — until the runtime's hot-swap takes over activation —
// a durable record of which version of each model is active, mirrored into the store's in-use and
// rollback-hold flags so GC can never remove what is serving or what a rollback would need.

import { MnnEdgeError } from '../../lib/errors.js';
import type { ActivationPort } from '../../lib/ota-ports.js';
import type { KvStore } from '../../lib/sqlite/database.js';
import { formatRef, type ModelRef, type ModelStore } from '../../models/index.js';
import { OtaRejection } from '../trust/rejection.js';
import type { PackageInstaller } from './ports.js';

export class ModelStoreInstaller implements PackageInstaller {
  readonly #store: ModelStore;
  readonly #headroomBytes: number;
  constructor(store: ModelStore, options: { headroomBytes?: number } = {}) {
    this.#store = store;
    this.#headroomBytes = options.headroomBytes ?? 0;
  }

  async install(tarball: string, expect: ModelRef, signal?: AbortSignal): Promise<void> {
    if (this.#store.get(expect)) return;
    try {
      await this.#store.import(tarball, {
        ...(signal ? { signal } : {}),
        // Every entry is checked against the manifest before it is written, and the disk against its total.
        manifestFirst: true,
        headroomBytes: this.#headroomBytes,
        // Called before the package is published: a package claiming another id or version never lands.
        checkpoint: (step, detail) => {
          if (step === 'staged' && detail !== formatRef(expect)) {
            throw new OtaRejection(
              'manifest-mismatch',
              `Package manifest says ${detail}, but the signed targets name ${formatRef(expect)}`,
            );
          }
        },
      });
    } catch (err) {
      if (err instanceof OtaRejection || !(err instanceof MnnEdgeError)) throw err;
      if (err.code === 'EARCHIVE') throw new OtaRejection('unsafe-archive', err.message, err.details);
      if (err.code === 'EVERIFY' || err.code === 'EMANIFEST') {
        throw new OtaRejection('manifest-mismatch', err.message, err.details);
      }
      throw err;
    }
  }
}

const ACTIVE_KEY = 'ota.active';
type ActiveMap = Record<string, { version: string; previous?: string }>;

/**
 * Activation without an engine: records the active version durably (SQLite) and keeps the store's flags in
 * step. The runtime's ActivationPort replaces it when models are actually served.
 */
export class StoreActivation implements ActivationPort {
  readonly #store: ModelStore;
  readonly #kv: KvStore;

  constructor(store: ModelStore, kv: KvStore) {
    this.#store = store;
    this.#kv = kv;
  }

  #read(): ActiveMap {
    return this.#kv.get<ActiveMap>(ACTIVE_KEY) ?? {};
  }

  #write(map: ActiveMap): void {
    this.#kv.set(ACTIVE_KEY, map);
    const refs = Object.entries(map).map(([id, a]) => ({ id, version: a.version }));
    this.#store.setInUse(refs.filter((r) => this.#store.get(r)));
    const held = Object.entries(map).flatMap(([id, a]) => (a.previous ? [{ id, version: a.previous }] : []));
    this.#store.setRollbackHold(held.filter((r) => this.#store.get(r)));
  }

  async activeVersion(modelId: string): Promise<string | undefined> {
    return this.#read()[modelId]?.version;
  }

  /** Where the active version of a model lives on disk (for probes and engines). */
  activeDir(modelId: string): string | undefined {
    const v = this.#read()[modelId]?.version;
    return v === undefined ? undefined : this.#store.packageDir({ id: modelId, version: v });
  }

  async activate(modelId: string, version: string): Promise<void> {
    if (!this.#store.get({ id: modelId, version })) {
      throw new MnnEdgeError('ENOENT', `Cannot activate ${modelId}@${version}: it is not installed`);
    }
    const map = this.#read();
    const current = map[modelId];
    if (current?.version === version) return;
    map[modelId] = { version, ...(current ? { previous: current.version } : {}) };
    this.#write(map);
  }

  async rollback(modelId: string, version: string | undefined): Promise<void> {
    const map = this.#read();
    if (version === undefined) delete map[modelId];
    else map[modelId] = { version };
    this.#write(map);
  }

  async commit(modelId: string, version: string): Promise<void> {
    // The previous version loses its hold and becomes an ordinary old version: kept until GC needs the space.
    const map = this.#read();
    map[modelId] = { version };
    this.#write(map);
  }
}
