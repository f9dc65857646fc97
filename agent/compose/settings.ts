// The settings module as compose wires it: the run-time settings over the inputs `run` read (or, composed
// without `run`, over the configuration given), a slot change checked against the installed models and the
// planner before anything is written, applied through the reload path.
import type { ConfigInputs } from '../config/load.js';
import { OverlayStore } from '../config/overlay-store.js';
import type { AgentConfig } from '../config/schema.js';
import type { ConfigSource } from '../config/sources.js';
import type { CommandRegistry } from '../fleet/commands.js';
import type { FleetModule } from '../fleet/module.js';
import type { AgentBus } from '../module.js';
import type { createReloader } from '../reload.js';
import { createSettingsModule, type SettingsModule } from '../settings/module.js';
import { checkSlots } from '../settings/slot-check.js';
import type { Platform } from './platform.js';

export interface LoadedConfig {
  config: AgentConfig;
  inputs: ConfigInputs;
  sources: Map<string, ConfigSource>;
}

/** Composed without `run` (tests): the configuration given is the file source, the overlay its data dir's. */
function givenInputs(config: AgentConfig): LoadedConfig {
  const store = new OverlayStore(config.dataDir);
  const inputs: ConfigInputs = {
    source: 'the configuration given',
    file: { ...config },
    flags: {},
    store,
    overlay: store.load(),
  };
  return { config, inputs, sources: new Map() };
}

/** The run-time settings over the inputs `run` read; a slot change is checked against the installed models and
 *  the planner before anything is written. */
export function settingsModule(
  config: AgentConfig,
  given: LoadedConfig | undefined,
  parts: {
    platform: Platform;
    fleet: FleetModule;
    commands: CommandRegistry;
    reload: ReturnType<typeof createReloader>;
    bus: AgentBus;
  },
): SettingsModule {
  const loaded = given ?? givenInputs(config);
  const { models, runtime } = parts.platform;
  return createSettingsModule({
    inputs: loaded.inputs,
    sources: loaded.sources,
    commands: parts.commands,
    apply: (next, reason) => parts.reload(next, reason, { detect: false }),
    check: async (next, changes) => {
      const rt = runtime.runtime();
      await checkSlots(next, changes, {
        catalog: () => models.planCatalog(),
        ...(rt ? { preview: (slots) => rt.preview(slots) } : {}),
      });
    },
    publish: (doc) => parts.fleet.agent?.setDocument('config', doc),
    bus: parts.bus,
  });
}

/**
 * SIGHUP and the fleet's `reload` command: the file (or overlay) re-read, the settings service runs on what was
 * read, and the reload path applies it. Returns the function for AgentServices.
 */
export function registerReloadFromDisk(
  settings: SettingsModule,
  reload: ReturnType<typeof createReloader>,
  reloadConfig: (() => LoadedConfig) | undefined,
  commands: CommandRegistry,
): (reason: string) => Promise<Record<string, unknown>> {
  const reloadFromDisk = async (reason: string) => {
    const loaded = reloadConfig?.();
    if (loaded) settings.service()?.reloaded(loaded);
    return reload(loaded?.config, reason);
  };
  commands.register({
    name: 'reload',
    summary: 're-read the configuration (file and run-time settings), detect the board again and replan',
    timeoutMs: 60_000,
    handler: async () => reloadFromDisk('reload requested over MQTT'),
  });
  return reloadFromDisk;
}
