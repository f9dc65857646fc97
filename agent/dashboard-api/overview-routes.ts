// The dashboard's overview: the device at a glance (identity, version, uptime, engine, broker, health) and the
// capabilities detected on it.
import { overviewOf } from './overview.js';
import { type RouteKit, unavailable } from './route-kit.js';

/** `startedMono`: the monotonic time the routes were registered at, which the uptime counts from. */
export function registerOverviewRoutes(kit: RouteKit, startedMono: number): void {
  const { options, get } = kit;
  const { sources, clock } = options;
  const uptimeS = () => Math.round((clock.monotonicMs() - startedMono) / 1000);
  get('/api/overview', (ctx) => {
    ctx.json(
      200,
      overviewOf(sources.capabilities(), {
        deviceId: options.deviceId(),
        version: options.version,
        uptimeS: uptimeS(),
        engine: sources.engine(),
        broker: sources.broker?.() ?? {
          state: 'disabled',
          reason: 'The fleet (MQTT) module is not running on this agent',
        },
        health: sources.health?.() ?? { healthy: true, problems: [] },
      }),
    );
  });
  get('/api/capabilities', (ctx) => {
    const caps = sources.capabilities();
    if (caps === undefined) throw unavailable('capabilities', 'Capability detection has not run yet');
    ctx.json(200, caps);
  });
}
