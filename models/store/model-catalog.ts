import type { ModelTask, ModelVariant } from '../manifest/types.js';
import type { InstalledPackage, ModelRef, ModelStore } from './model-store.js';

// What the planner sees of the store: installed variants with the directory they run from. Read-only, so
// planning stays a pure function of (capabilities, catalog, measurements).

export interface CatalogVariant {
  ref: ModelRef;
  task: ModelTask;
  variant: ModelVariant;
  /** Package directory; the variant's file paths are relative to it. */
  dir: string;
  inUse: boolean;
}

export class ModelCatalog {
  readonly #store: Pick<ModelStore, 'list'>;

  constructor(store: Pick<ModelStore, 'list'>) {
    this.#store = store;
  }

  packages(): InstalledPackage[] {
    return this.#store.list();
  }

  /** Every installed variant, newest version of each model first. */
  variants(filter: { task?: ModelTask; id?: string } = {}): CatalogVariant[] {
    return this.#store
      .list()
      .filter(
        (p) =>
          (filter.task === undefined || p.task === filter.task) &&
          (filter.id === undefined || p.id === filter.id),
      )
      .reverse()
      .flatMap((p) =>
        p.manifest.variants.map((variant) => ({
          ref: { id: p.id, version: p.version },
          task: p.task,
          variant,
          dir: p.dir,
          inUse: p.inUse,
        })),
      );
  }
}
