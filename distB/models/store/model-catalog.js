export class ModelCatalog {
    #store;
    constructor(store) {
        this.#store = store;
    }
    packages() {
        return this.#store.list();
    }
    /** Every installed variant, newest version of each model first. */
    variants(filter = {}) {
        return this.#store
            .list()
            .filter((p) => (filter.task === undefined || p.task === filter.task) &&
            (filter.id === undefined || p.id === filter.id))
            .reverse()
            .flatMap((p) => p.manifest.variants.map((variant) => ({
            ref: { id: p.id, version: p.version },
            task: p.task,
            variant,
            dir: p.dir,
            inUse: p.inUse,
        })));
    }
}
//# sourceMappingURL=model-catalog.js.map