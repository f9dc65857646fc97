// What the dashboard's route groups (one file per feature: overview-routes.ts, models-routes.ts,
// telemetry-routes.ts, record-routes.ts, workload-routes.ts; hub-routes.ts with its own kit) are given by
// registerDashboardRoutes (routes.ts), and the answer they share for a port left out.
import type { WebSocket } from 'ws';
import type { Clock } from '../../lib/clock.js';
import { HttpError } from '../../lib/http-error.js';
import type { Logger } from '../../lib/log.js';
import type { LogTail } from '../../lib/log-tail.js';
import type { HttpRouter, RequestContext } from '../http/router.js';
import type { SessionLimiter } from '../http/session-limits.js';
import type { DashboardSources } from './ports.js';

export interface DashboardRoutesOptions {
  router: HttpRouter;
  sources: DashboardSources;
  /** The built dashboard (dashboard/dist); default: next to the agent's sources or its compiled output. */
  distDir?: string;
  logTail?: LogTail;
  clock: Clock;
  deviceId: () => string;
  version: string;
  limits: {
    maxUploadBytes: number;
    maxWsMessageBytes: number;
    maxSessions: number;
    wsMessagesPerSecond?: number;
  };
  /** Shared with the voice and vision sockets, so all live sessions count against one limit. */
  sessions?: SessionLimiter;
  logger: Logger;
}

/** A port left out: a clear "unavailable" answer (503), never a 500. */
export function unavailable(what: string, reason: string): HttpError {
  return new HttpError(503, `${what}_unavailable`, reason);
}

/** What the route groups share: the options, the route helpers and the live sessions. */
export interface RouteKit {
  options: DashboardRoutesOptions;
  get: (path: string, handler: (ctx: RequestContext) => void | Promise<void>) => void;
  removers: Array<() => void>;
  sessions: SessionLimiter;
  wsRate: number;
  liveSockets: Set<WebSocket>;
}
