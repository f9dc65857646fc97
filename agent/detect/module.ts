import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Capabilities } from '../../lib/capabilities.js';
import type { AgentConfig } from '../config/schema.js';
import type { CommandRegistry } from '../fleet/commands.js';
import type { AgentContext, AgentModule } from '../module.js';
import { readCapabilitiesCache } from './cache.js';
import { detect } from './detect.js';

// Detection as an agent module: the capability document at start (from the privileged cache or a live probe),
// the fleet's `detect` command, and a handle the other modules read (and the runtime refines with the engine's
// compiled-in backends).

export const CAPABILITIES_CACHE_FILE = 'capabilities.json';

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

export interface DetectModule extends AgentModule {
  capabilities(): Capabilities | undefined;
  /** Replace the document (the runtime applies the engine's backends; a reload detects again). */
  update(caps: Capabilities): void;
  /** Detect again (reload): the cache or a live probe, as at start; returns where it came from. */
  reload(config: AgentConfig): string;
}

export function createDetectModule(deps: { commands?: CommandRegistry } = {}): DetectModule {
  let caps: Capabilities | undefined;
  return {
    name: 'detect',
    capabilities: () => caps,
    update(next) {
      caps = next;
    },
    reload(config) {
      const detected = loadCapabilities(config);
      caps = detected.caps;
      return detected.source;
    },
    start(ctx: AgentContext) {
      const loaded = loadCapabilities(ctx.config);
      caps = loaded.caps;
      ctx.logger.info('capabilities', {
        source: loaded.source,
        family: caps.soc.family.value,
        soc: caps.soc.name.value,
        backends: caps.backends.filter((b) => b.usable).map((b) => b.backend),
      });
      deps.commands?.register<{ live?: boolean }>({
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
}
