import type { Clock } from '../../lib/clock.js';
import { HttpError } from '../../lib/http-error.js';
import type { Logger } from '../../lib/log.js';
import type { DeviceIdentity } from '../identity/device-identity.js';
import type { ClockStatus } from '../time/trusted-time.js';
import { type Authenticator, sessionCookie } from './auth.js';
import type { LoginLimiter } from './login-limiter.js';
import type { HttpRouter } from './router.js';
import type { SessionStore } from './sessions.js';

// The endpoints the agent itself owns: liveness, login/logout, and who-am-I for the dashboard.

export interface CoreRoutesOptions {
  router: HttpRouter;
  version: string;
  clock: Pick<Clock, 'monotonicMs'>;
  authenticator: Authenticator;
  sessions: SessionStore;
  limiter: LoginLimiter;
  sessionTtlMs: number;
  identity: () => DeviceIdentity;
  clockStatus: () => ClockStatus;
  /** Each module's start state (the agent answers before its modules have started). */
  modules?: () => Record<string, string>;
  /** More for /healthz (a run-time settings file that was not used, say); no secrets. */
  details?: () => Record<string, unknown>;
  logger: Logger;
}

export function registerCoreRoutes(options: CoreRoutesOptions): void {
  const { router, authenticator, sessions, limiter, logger } = options;
  const startedMono = options.clock.monotonicMs();

  // Liveness for systemd watchdogs, load balancers and the fleet: public, cheap, nothing secret.
  router.route(
    'GET',
    '/healthz',
    (ctx) => {
      ctx.json(200, {
        status: 'ok',
        version: options.version,
        uptimeS: Math.round((options.clock.monotonicMs() - startedMono) / 1000),
        ...(options.modules ? { modules: options.modules() } : {}),
        ...(options.details?.() ?? {}),
      });
    },
    { auth: false },
  );

  router.route(
    'POST',
    '/api/login',
    async (ctx) => {
      const client = ctx.req.socket.remoteAddress ?? 'unknown';
      const waitMs = limiter.retryAfterMs(client);
      if (waitMs > 0) {
        const seconds = Math.ceil(waitMs / 1000);
        throw new HttpError(429, 'too_many_attempts', `Too many failed logins; try again in ${seconds} s`, {
          'Retry-After': String(seconds),
        });
      }
      const body = await ctx.readJson();
      const token = (body as { token?: unknown } | null)?.token;
      if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof token !== 'string') {
        throw new HttpError(400, 'invalid_request', 'Expected a JSON object {"token": string}');
      }
      if (!authenticator.tokenMatches(token)) {
        limiter.recordFailure(client);
        logger.warn('failed login', { client });
        throw new HttpError(
          401,
          'invalid_token',
          'The pairing token is not valid (see `mnn-edge token` on the device)',
        );
      }
      const { cookieValue, session } = sessions.create(client);
      logger.info('login', { client });
      ctx.json(
        200,
        { ok: true, expiresAt: new Date(session.expiresAt).toISOString() },
        {
          'Set-Cookie': sessionCookie(cookieValue, {
            maxAgeS: options.sessionTtlMs / 1000,
            secure: ctx.secure,
          }),
        },
      );
    },
    { auth: false },
  );

  // Public so a browser with an expired or revoked cookie can still clear it.
  router.route(
    'POST',
    '/api/logout',
    (ctx) => {
      const revoked = ctx.auth?.method === 'session' ? sessions.destroy(ctx.auth.cookieValue) : false;
      ctx.json(
        200,
        { ok: true, revoked },
        { 'Set-Cookie': sessionCookie('', { maxAgeS: 0, secure: ctx.secure }) },
      );
    },
    { auth: false },
  );

  router.route('GET', '/api/session', (ctx) => {
    const identity = options.identity();
    ctx.json(200, {
      method: ctx.auth?.method,
      expiresAt: ctx.auth?.method === 'session' ? new Date(ctx.auth.session.expiresAt).toISOString() : null,
      device: { deviceId: identity.deviceId, tags: identity.tags, source: identity.source },
      clock: options.clockStatus(),
    });
  });
}
