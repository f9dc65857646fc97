import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WebSocket } from 'ws';
import type { Clock } from '../../lib/clock.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import type { Logger } from '../../lib/log.js';
import { isLogLevel, type LogTail } from '../../lib/log-tail.js';
import { intParam, listParam } from '../http/query.js';
import type { HttpRouter, RequestContext } from '../http/router.js';
import {
  createSessionLimiter,
  type LimitsView,
  MessageRateLimiter,
  type SessionLimiter,
  WS_CLOSE,
} from '../http/session-limits.js';
import { loadStaticSite, type StaticSite } from '../http/static-files.js';
import type { AgentContext, AgentModule } from '../module.js';
import { registerPlacementRoutes } from '../runtime/routes.js';
import { registerHubRoutes } from './hub-routes.js';
import { overviewOf } from './overview.js';
import type { DashboardSources, TelemetrySample } from './ports.js';

// The dashboard's HTTP surface: the static page (public: it holds no data and must load to show the login
// form) and the JSON and WebSocket API it reads (authenticated, like every route by default). Each endpoint
// answers from the ports it was given; a port left out becomes a clear "unavailable" answer, never a 500.

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

function unavailable(what: string, reason: string): HttpError {
  return new HttpError(503, `${what}_unavailable`, reason);
}

/** What the route groups share: the options, the route helpers and the live sessions. */
interface RouteKit {
  options: DashboardRoutesOptions;
  get: (path: string, handler: (ctx: RequestContext) => void | Promise<void>) => void;
  removers: Array<() => void>;
  sessions: SessionLimiter;
  wsRate: number;
  liveSockets: Set<WebSocket>;
}

/** The telemetry metrics, history and the live sample socket. */
function registerTelemetryRoutes(kit: RouteKit): void {
  const { options, get, removers, sessions, wsRate, liveSockets } = kit;
  const { router, sources, clock } = options;
  // ---- telemetry ----
  const telemetry = () => {
    if (sources.telemetry === undefined)
      throw unavailable('telemetry', 'Telemetry sampling is not running on this agent');
    return sources.telemetry;
  };
  get('/api/telemetry/metrics', (ctx) => ctx.json(200, { metrics: telemetry().metrics() }));
  get('/api/telemetry/history', (ctx) => {
    const port = telemetry();
    const metrics = listParam(ctx.url, 'metrics');
    const now = clock.nowMs();
    const minutes = intParam(ctx.url, 'minutes', { min: 1, max: 7 * 24 * 60, fallback: 60 });
    const maxPoints = intParam(ctx.url, 'maxPoints', { min: 1, max: 2000, fallback: 360 });
    try {
      ctx.json(200, {
        since: now - minutes * 60_000,
        until: now,
        series: port.history({ metrics, since: now - minutes * 60_000, until: now, maxPoints }),
      });
    } catch (err) {
      if (err instanceof MnnEdgeError && err.code === 'EINVAL')
        throw new HttpError(400, 'invalid_parameter', err.message);
      throw err;
    }
  });
  removers.push(
    router.upgrade('/api/telemetry/live', (ws, up) => {
      if (sources.telemetry === undefined) {
        ws.close(1011, 'Telemetry sampling is not running on this agent');
        return;
      }
      const release = sessions.tryAcquire({
        kind: 'dashboard telemetry',
        who: up.req.socket.remoteAddress ?? 'unknown',
      });
      if (release === undefined) {
        ws.close(WS_CLOSE.tooManySessions, sessions.refusal().slice(0, 120));
        return;
      }
      liveSockets.add(ws);
      const limiter = new MessageRateLimiter(clock, wsRate, wsRate * 2);
      let filter: Set<string> | undefined;
      const send = (sample: TelemetrySample) => {
        // A slow browser must not make the agent queue samples without bound: skip while the socket is backed up.
        if (ws.bufferedAmount > 256 * 1024) return;
        const values = filter
          ? Object.fromEntries(Object.entries(sample.values).filter(([k]) => filter!.has(k)))
          : sample.values;
        ws.send(JSON.stringify({ type: 'sample', t: sample.t, values }));
      };
      const unsubscribe = sources.telemetry.subscribe(send);
      ws.send(JSON.stringify({ type: 'hello', metrics: sources.telemetry.metrics() }));
      const latest = sources.telemetry.latest();
      if (latest) send(latest);
      ws.on('message', (data, isBinary) => {
        if (!limiter.take()) {
          ws.close(WS_CLOSE.rateLimited, limiter.describe().slice(0, 120));
          return;
        }
        if (isBinary) return;
        try {
          const msg = JSON.parse(String(data)) as { type?: unknown; metrics?: unknown };
          if (msg.type === 'subscribe' && Array.isArray(msg.metrics)) {
            filter = new Set(msg.metrics.filter((m): m is string => typeof m === 'string').slice(0, 256));
          }
        } catch {
          ws.send(
            JSON.stringify({
              type: 'error',
              message: 'Expected a JSON message like {"type":"subscribe","metrics":[…]}',
            }),
          );
        }
      });
      ws.on('close', () => {
        unsubscribe();
        release();
        liveSockets.delete(ws);
      });
    }),
  );
}

/** The OTA job list and the log tail. */
function registerRecordRoutes(kit: RouteKit): void {
  const { options, get } = kit;
  const { sources } = options;
  // ---- OTA ----
  get('/api/ota/jobs', (ctx) => {
    if (sources.ota === undefined) throw unavailable('ota', 'OTA is not enabled on this agent');
    ctx.json(200, { jobs: sources.ota.jobs(intParam(ctx.url, 'limit', { min: 1, max: 200, fallback: 50 })) });
  });

  // ---- logs ----
  get('/api/logs', (ctx) => {
    if (options.logTail === undefined)
      throw unavailable(
        'logs',
        'The in-memory log tail is not enabled; read the journal: journalctl -u mnn-edge',
      );
    const level = ctx.url.searchParams.get('level') ?? 'debug';
    if (!isLogLevel(level))
      throw new HttpError(
        400,
        'invalid_parameter',
        `Query parameter level must be one of debug, info, warn, error, got ${JSON.stringify(level)}`,
      );
    const after = ctx.url.searchParams.has('after')
      ? intParam(ctx.url, 'after', { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 })
      : undefined;
    ctx.json(
      200,
      options.logTail.tail({
        limit: intParam(ctx.url, 'limit', { min: 1, max: 1000, fallback: 200 }),
        minLevel: level,
        ...(after !== undefined ? { after } : {}),
      }),
    );
  });
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

  // ---- overview ----
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

  // ---- placement (the runtime's routes, over the port) ----
  removers.push(...registerPlacementRoutes(router, sources.placement, sources.engine));

  // ---- models ----
  get('/api/models', async (ctx) => {
    if (sources.models === undefined)
      throw unavailable('models', 'The model store is not available on this agent');
    const installed = await sources.models.installed();
    ctx.json(200, {
      installed,
      installs: sources.models.installs(),
      // Shown by the empty state, so the first step is on screen rather than in a manual.
      hint:
        installed.length === 0
          ? `No models installed. ${sources.hub ? 'Get one from a model hub under "Get models" below, or pull' : 'Pull'} the first ones on the device with \`mnn-edge models pull hf://taobao-mnn/<repo>\` (or a package: \`mnn-edge models pull <package.tar>\`; import a directory with \`mnn-edge models import <dir>\`), or send an OTA job from the fleet.`
          : undefined,
    });
  });

  const kit: RouteKit = { options, get, removers, sessions, wsRate, liveSockets };
  registerTelemetryRoutes(kit);
  registerRecordRoutes(kit);
  registerHubRoutes({ ...kit, router, hub: sources.hub, clock });

  // ---- workloads and limits ----
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
