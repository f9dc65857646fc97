import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readCapabilitiesCache } from './cache.js';
import { detect } from './detect.js';
// Detection as an agent module: the capability document at start (from the privileged cache or a live probe),
// the fleet's `detect` command, and a handle the other modules read (and the runtime refines with the engine's
// compiled-in backends).
export const CAPABILITIES_CACHE_FILE = 'capabilities.json';
/** A privileged ExecStartPre writes the cache (root-only files such as the RKNPU debugfs); else probe now. */
export function loadCapabilities(config) {
    const cache = join(config.dataDir, CAPABILITIES_CACHE_FILE);
    if (config.root === '/' && existsSync(cache)) {
        try {
            return { caps: readCapabilitiesCache(cache), source: cache };
        }
        catch {
            // A stale or damaged cache is not fatal: live detection below still works, with fewer privileges.
        }
    }
    return { caps: detect({ root: config.root }), source: `live detection of ${config.root}` };
}
export function createDetectModule(deps = {}) {
    let caps;
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
        start(ctx) {
            const loaded = loadCapabilities(ctx.config);
            caps = loaded.caps;
            ctx.logger.info('capabilities', {
                source: loaded.source,
                family: caps.soc.family.value,
                soc: caps.soc.name.value,
                backends: caps.backends.filter((b) => b.usable).map((b) => b.backend),
            });
            deps.commands?.register({
                name: 'detect',
                summary: 'the capability document (cached at start; live: true probes again)',
                params: { type: 'object', additionalProperties: false, properties: { live: { type: 'boolean' } } },
                handler: (params) => {
                    if (params.live)
                        caps = detect({ root: ctx.config.root });
                    return caps;
                },
            });
        },
    };
}
//# sourceMappingURL=module.js.map