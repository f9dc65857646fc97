import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { modelsConfigOf } from '../models/config.js';
import { ModelCatalog, ModelStore } from '../models/index.js';
import type { AgentConfig } from './config/schema.js';
import { readCapabilitiesCache } from './detect/cache.js';
import { type Capabilities, detect } from './detect/index.js';
import { LogRing } from './fleet/builtin-commands.js';
import { CommandRegistry } from './fleet/commands.js';
import { createFleetModule, type FleetModule } from './fleet/module.js';
import type { BoardInfo } from './fleet/protocol.js';
import type { AgentContext, AgentModule } from './main.js';
import { createWorkloadsModule, type WorkloadsModule } from './workloads/module.js';

// Which modules `mnn-edge run` starts and how they see each other. Modules are created here, in dependency
// order, and share typed handles (never module-level state); main.ts starts them in this order.

export const CAPABILITIES_CACHE_FILE = 'capabilities.json';

/** Handles that later modules (and the dashboard) read; filled in as the modules start. */
export interface AgentServices {
  readonly commands: CommandRegistry;
  readonly logs: LogRing;
  capabilities(): Capabilities | undefined;
  models(): { store: ModelStore; catalog: ModelCatalog } | undefined;
  fleet(): FleetModule;
  workloads(): WorkloadsModule;
}

export interface ComposeOptions {
  agentVersion: string;
  logs?: LogRing;
}

/** A privileged ExecStartPre writes the cache (root-only files such as the RKNPU debugfs); else probe now. */
export function loadCapabilities(config: AgentConfig): { caps: Capabilities; source: string } {
  const cache = join(config.dataDir, CAPABILITIES_CACHE_FILE);
  if (config.root === '/' && existsSync(cache)) {
    try {
      return { caps: readCapabilitiesCache(cache), source: cache };
    } catch {
      // A stale or damaged cache is not fatal: live detection below still works, with fewer privileges.
    }
  }
  return { caps: detect({ root: config.root }), source: `live detection of ${config.root}` };
}

export function boardInfoOf(caps: Capabilities | undefined): BoardInfo | undefined {
  if (!caps) return undefined;
  const info: BoardInfo = { family: caps.soc.family.value ?? 'unknown' };
  if (caps.board.model.value) info.model = caps.board.model.value;
  if (caps.soc.name.value) info.soc = caps.soc.name.value;
  return info;
}

export function composeModules(config: AgentConfig, options: ComposeOptions) {
  const commands = new CommandRegistry();
  const logs = options.logs ?? new LogRing(2000);
  let caps: Capabilities | undefined;
  let models: { store: ModelStore; catalog: ModelCatalog } | undefined;

  const detectModule: AgentModule = {
    name: 'detect',
    start(ctx: AgentContext) {
      const loaded = loadCapabilities(ctx.config);
      caps = loaded.caps;
      ctx.logger.info('capabilities', {
        source: loaded.source,
        family: caps.soc.family.value,
        soc: caps.soc.name.value,
        backends: caps.backends.filter((b) => b.usable).map((b) => b.backend),
      });
      commands.register<{ live?: boolean }>({
        name: 'detect',
        summary: 'the capability document (cached at start; live: true probes again)',
        params: { type: 'object', additionalProperties: false, properties: { live: { type: 'boolean' } } },
        handler: (params) => {
          if (params.live) caps = detect({ root: ctx.config.root });
          return caps;
        },
      });
    },
  };

  const modelsModule: AgentModule = {
    name: 'models',
    start(ctx: AgentContext) {
      const limits = modelsConfigOf(ctx.config['models']);
      const { store, recovery } = ModelStore.open({
        dataDir: ctx.config.dataDir,
        db: ctx.db,
        log: ctx.logger,
        clock: ctx.clock,
        ...(limits.maxPackageBytes !== undefined
          ? { limits: { maxTotalBytes: limits.maxPackageBytes } }
          : {}),
      });
      models = { store, catalog: new ModelCatalog(store) };
      ctx.logger.info('model store ready', { root: store.root, recovery });
      commands.register({
        name: 'list-models',
        summary: 'installed model packages with their variants and state',
        handler: () => store.list(),
      });
    },
    stop() {
      models?.store.close();
      models = undefined;
    },
  };

  // Watch-mode answers and other workload events go out on MQTT `events` once the fleet is connected.
  let fleetRef: FleetModule | undefined;
  const workloads = createWorkloadsModule({
    publishEvent: (type, data) => fleetRef?.agent?.publishEvent(type, data),
  });
  const fleet = createFleetModule({
    agentVersion: options.agentVersion,
    commands,
    logs,
    board: () => boardInfoOf(caps),
    workloads,
  });
  fleetRef = fleet;

  const services: AgentServices = {
    commands,
    logs,
    capabilities: () => caps,
    models: () => models,
    fleet: () => fleet,
    workloads: () => workloads,
  };
  const modules: AgentModule[] = [detectModule, modelsModule, fleet, workloads];
  return { modules, services };
}
