// The dashboard's view of the voice and vision workloads (with the engine they run on), and of the HTTP limits
// their live sessions count against.
import type { LimitsView } from '../http/session-limits.js';
import type { RouteKit } from './route-kit.js';

export function registerWorkloadRoutes(kit: RouteKit): void {
  const { options, get, sessions, wsRate } = kit;
  const { sources } = options;
  get('/api/workloads', (ctx) => {
    const engine = sources.engine();
    const absent = {
      available: false as const,
      reason: 'The voice and vision workloads are not running on this agent',
    };
    ctx.json(200, {
      engine,
      voice: sources.workloads?.voice() ?? absent,
      vision: sources.workloads?.vision() ?? absent,
    });
  });
  get('/api/limits', (ctx) => {
    const view: LimitsView = {
      maxUploadBytes: options.limits.maxUploadBytes,
      maxWsMessageBytes: options.limits.maxWsMessageBytes,
      maxSessions: sessions.limit,
      activeSessions: sessions.active,
      sessionHolders: sessions.holders(),
      wsMessagesPerSecond: wsRate,
    };
    ctx.json(200, view);
  });
}
