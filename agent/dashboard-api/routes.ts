import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WebSocket } from 'ws';
import type { LogTail } from '../../lib/log-tail.js';
import type { RequestContext } from '../http/router.js';
import { createSessionLimiter, type SessionLimiter } from '../http/session-limits.js';
import { loadStaticSite, type StaticSite } from '../http/static-files.js';
import type { AgentContext, AgentModule } from '../module.js';
import { registerPlacementRoutes } from '../runtime/routes.js';
import { registerHubRoutes } from './hub-routes.js';
import { registerModelsRoutes } from './models-routes.js';
import { registerOverviewRoutes } from './overview-routes.js';
import type { DashboardSources } from './ports.js';
import { registerRecordRoutes } from './record-routes.js';
import type { DashboardRoutesOptions, RouteKit } from './route-kit.js';
import { registerTelemetryRoutes } from './telemetry-routes.js';
import { registerWorkloadRoutes } from './workload-routes.js';

export type { DashboardRoutesOptions } from './route-kit.js';

// The dashboard's HTTP surface: the static page (public: it holds no data and must load to show the login
// form) and the JSON and WebSocket API it reads (authenticated, like every route by default). Each endpoint
// answers from the ports it was given; a port left out becomes a clear "unavailable" answer, never a 500.
// This file serves the page and composes the API's route groups, one file per feature (route-kit.ts).

export interface DashboardRoutes {
  site: StaticSite;
  sessions: SessionLimiter;
  /** Remove every route and close the live sockets. */
  close(): void;
}

/** dashboard/dist relative to this file, both under tsx (agent/http) and compiled (dist/agent/http). */
export function defaultDistDir(): string {
  const twoUp = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const repo = basename(twoUp) === 'dist' ? dirname(twoUp) : twoUp;
  return join(repo, 'dashboard', 'dist');
}

export function registerDashboardRoutes(options: DashboardRoutesOptions): DashboardRoutes {
  const { router, sources, clock, logger } = options;
  const site = loadStaticSite(options.distDir ?? defaultDistDir());
  const sessions = options.sessions ?? createSessionLimiter(options.limits.maxSessions);
  const wsRate = options.limits.wsMessagesPerSecond ?? 50;
  const startedMono = clock.monotonicMs();
  const removers: Array<() => void> = [];
  const liveSockets = new Set<WebSocket>();
  const get = (path: string, handler: (ctx: RequestContext) => void | Promise<void>) =>
    removers.push(router.route('GET', path, handler));

  if (!site.built)
    logger.warn('dashboard files not built; serving a notice instead', { hint: 'npm run build:dashboard' });

  // ---- static page ----
  removers.push(router.route('GET', '/', (ctx) => site.serve(ctx, 'index.html'), { auth: false }));
  removers.push(
    router.route('GET', '/assets/*', (ctx) => site.serve(ctx, `assets/${ctx.params['*']}`), { auth: false }),
  );

  const kit: RouteKit = { options, get, removers, sessions, wsRate, liveSockets };
  registerOverviewRoutes(kit, startedMono);
  // The placement routes are the runtime's, over the port.
  removers.push(...registerPlacementRoutes(router, sources.placement, sources.engine));
  registerModelsRoutes(kit);
  registerTelemetryRoutes(kit);
  registerRecordRoutes(kit);
  registerHubRoutes({ ...kit, router, hub: sources.hub, clock });
  registerWorkloadRoutes(kit);

  return {
    site,
    sessions,
    close() {
      for (const remove of removers.splice(0)) remove();
      for (const ws of liveSockets) ws.close(1001, 'agent stopping');
    },
  };
}

export interface DashboardModuleOptions {
  /** The ports, or a function building them from the agent's context at start (store, config, identity). */
  sources: DashboardSources | ((ctx: AgentContext) => DashboardSources);
  logTail?: LogTail;
  distDir?: string;
  version: string;
  sessions?: SessionLimiter;
}

/** The dashboard as an AgentModule: its routes exist from the first request and go away at stop. */
export function createDashboardModule(
  options: DashboardModuleOptions,
): AgentModule & { routes(): DashboardRoutes | undefined } {
  let routes: DashboardRoutes | undefined;
  return {
    name: 'dashboard',
    routes: () => routes,
    start(ctx) {
      routes = registerDashboardRoutes({
        router: ctx.router,
        sources: typeof options.sources === 'function' ? options.sources(ctx) : options.sources,
        ...(options.logTail ? { logTail: options.logTail } : {}),
        ...(options.distDir ? { distDir: options.distDir } : {}),
        ...(options.sessions ? { sessions: options.sessions } : {}),
        clock: ctx.clock,
        deviceId: () => ctx.identity.deviceId,
        version: options.version,
        limits: {
          maxUploadBytes: ctx.config.http.maxUploadBytes,
          maxWsMessageBytes: ctx.config.http.maxWsMessageBytes,
          maxSessions: ctx.config.http.maxSessions,
        },
        logger: ctx.logger,
      });
    },
    stop() {
      routes?.close();
      routes = undefined;
    },
  };
}
