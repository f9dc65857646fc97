import { modelsConfigOf, storeLimitsOf } from '../../models/config.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { registerPullModelCommand } from '../../models/hub/pull-command.js';
import { HubPullJobs, hubDownloadsDir } from '../../models/hub/pull-jobs.js';
import { ModelCatalog, ModelStore } from '../../models/index.js';
import { resolveOtaConfig } from '../config/sections/ota.js';
import { catalogFromStore } from '../plan/from-catalog.js';
export function createModelsModule(deps = {}) {
    let models;
    let pulls;
    return {
        name: 'models',
        models: () => models,
        pulls: () => pulls,
        planCatalog: () => catalogFromStore(models?.catalog.variants() ?? []),
        inUse: (refs) => models?.store.setInUse(refs),
        installs: {
            on: (event, listener) => {
                const store = models?.store;
                if (!store)
                    return () => { };
                store.on(event, listener);
                return () => store.off(event, listener);
            },
        },
        start(ctx) {
            const limits = modelsConfigOf(ctx.config['models']);
            const { store, recovery } = ModelStore.open({
                dataDir: ctx.config.dataDir,
                db: ctx.db,
                log: ctx.logger,
                clock: ctx.clock,
                limits: storeLimitsOf(limits),
            });
            models = { store, catalog: new ModelCatalog(store) };
            ctx.logger.info('model store ready', { root: store.root, recovery });
            deps.commands?.register({
                name: 'list-models',
                summary: 'installed model packages with their variants and state',
                handler: () => store.list(),
            });
            const download = resolveOtaConfig(ctx.config['ota']).download;
            pulls = new HubPullJobs({
                store: () => models?.store,
                client: (hub) => hubClient(hub, hubSettings(hub, limits, process.env)),
                download,
                workRoot: hubDownloadsDir(ctx.config.dataDir),
            });
            // Hub pulls from the fleet (docs/MODEL-HUBS.md): progress and the outcome go out as events.
            if (deps.commands)
                registerPullModelCommand(deps.commands, {
                    store: () => models?.store,
                    models: limits,
                    download,
                    dataDir: ctx.config.dataDir,
                    env: process.env,
                    publishEvent: (type, data) => deps.publishEvent?.(type, data),
                    jobs: pulls,
                });
        },
        async stop() {
            // A pull stops before the store closes under it; what arrived stays for the next pull to resume.
            await pulls?.close();
            pulls = undefined;
            models?.store.close();
            models = undefined;
        },
    };
}
//# sourceMappingURL=module.js.map