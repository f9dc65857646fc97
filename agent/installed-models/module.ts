import { type DownloadPolicy, defaultDownloadPolicy } from '../../lib/download/downloader.js';
import { errorMessage } from '../../lib/errors.js';
import { modelsConfigOf, storeLimitsOf } from '../../models/config.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { registerPullModelCommand } from '../../models/hub/pull-command.js';
import { HubPullJobs, hubDownloadsDir } from '../../models/hub/pull-jobs.js';
import { removeStalePartials } from '../../models/hub/stale-partials.js';
import { ModelCatalog, ModelStore } from '../../models/index.js';
import { installShippedWake } from '../../models/wake-shipped/install.js';
import { findShippedWake } from '../../models/wake-shipped/locate.js';
import type { CommandRegistry } from '../fleet/commands.js';
import type { AgentContext, AgentModule, PublishEvent } from '../module.js';
import { catalogFromStore } from '../plan/from-catalog.js';
import type { PlanCatalog } from '../plan/types.js';

// The model store as an agent module: opened (half-finished installs recovered) at start, closed at stop, with
// the fleet's `list-models` command and the handles the planner, the runtime and OTA read.

export interface InstalledModels {
  store: ModelStore;
  catalog: ModelCatalog;
}

export interface ModelsModule extends AgentModule {
  models(): InstalledModels | undefined;
  /** Hub pulls running in the agent (the dashboard's and the fleet's), once started. */
  pulls(): HubPullJobs | undefined;
  /** The installed variants as the planner reads them (empty before start). */
  planCatalog(): PlanCatalog;
  /** The store's in-use marking, so GC never removes what the placement uses. */
  inUse(refs: { id: string; version: string }[]): void;
  /** The store's install events; a no-op subscription before start. */
  readonly installs: {
    on(event: 'installed', listener: (ref: { id: string; version: string }) => void): () => void;
  };
}

export interface ModelsModuleDeps {
  commands?: CommandRegistry;
  publishEvent?: PublishEvent;
  /** The limits hub pulls download under, read from the configuration at start: compose.ts gives the `ota`
   *  section's (hub pulls and OTA jobs share one download policy); the library's defaults without it. */
  downloadPolicy?: (config: AgentContext['config']) => DownloadPolicy;
  /** Where the shipped wake word is looked for (MNN_EDGE_WAKE_DIR, MNN_EDGE_CACHE); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The shipped wake word (the Debian package's or the image's copy) into the store, before the runtime places
 * the slots: the configuration's default may name it (agent/config/wake-default.ts). A failure is logged and
 * the agent goes on; the slot then says its model is missing.
 */
async function takeShippedWake(store: ModelStore, ctx: AgentContext, env: NodeJS.ProcessEnv): Promise<void> {
  const shipped = findShippedWake(env);
  if (!shipped) return;
  try {
    const r = await installShippedWake(store, shipped);
    if (r.status === 'installed')
      ctx.logger.info('installed the shipped wake word', {
        model: `${shipped.id}@${shipped.version}`,
        from: shipped.dir,
      });
  } catch (err) {
    ctx.logger.warn('the shipped wake word could not be installed', {
      from: shipped.dir,
      error: errorMessage(err),
    });
  }
}

export function createModelsModule(deps: ModelsModuleDeps = {}): ModelsModule {
  let models: InstalledModels | undefined;
  let pulls: HubPullJobs | undefined;
  return {
    name: 'models',
    models: () => models,
    pulls: () => pulls,
    planCatalog: () => catalogFromStore(models?.catalog.variants() ?? []),
    inUse: (refs) => models?.store.setInUse(refs),
    installs: {
      on: (event, listener) => {
        const store = models?.store;
        if (!store) return () => {};
        store.on(event, listener);
        return () => store.off(event, listener);
      },
    },
    async start(ctx: AgentContext) {
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
      await takeShippedWake(store, ctx, deps.env ?? process.env);
      deps.commands?.register({
        name: 'list-models',
        summary: 'installed model packages with their variants and state',
        handler: () => store.list(),
      });
      for (const p of removeStalePartials(hubDownloadsDir(ctx.config.dataDir)))
        ctx.logger.info('removed a partial hub download nobody resumed', { ...p });
      const download = deps.downloadPolicy?.(ctx.config) ?? defaultDownloadPolicy;
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
