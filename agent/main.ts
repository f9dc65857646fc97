import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, systemClock } from './common/clock.js';
import { MnnEdgeError } from './common/errors.js';
import { createLogger, type Logger } from './common/log.js';
import { TypedEventEmitter } from './common/typed-events.js';
import type { AgentConfig } from './config/schema.js';
import { createAuthenticator } from './http/auth.js';
import { registerCoreRoutes } from './http/core-routes.js';
import { createLoginLimiter } from './http/login-limiter.js';
import { ensurePairingToken } from './http/pairing-token.js';
import { HttpRouter } from './http/router.js';
import { type AgentHttpServer, createHttpServer } from './http/server.js';
import { createSessionStore } from './http/sessions.js';
import { resolveDeviceIdentity } from './identity/device-identity.js';
import type { AgentContext, AgentEvents, AgentModule } from './module.js';
import { type Db, KvStore, openStore } from './store/database.js';
import { type SyncProbe, timesyncdProbe } from './time/sync-probe.js';
import { createTrustedTime } from './time/trusted-time.js';

export type { AgentContext, AgentEvents, AgentModule } from './module.js';

// The composition root: the only place that knows every concrete piece. Each module receives what it needs
// as arguments, so any of them can be built alone in a test; nothing here is module-level state.
//
// Later modules (fleet, runtime, workloads, dashboard, OpenAI API) plug in as AgentModules: started in order
// after the core is up and before the HTTP server accepts connections (so their routes exist from the first
// request), stopped in reverse order before the store closes.

export interface AgentDeps {
  logger?: Logger;
  clock?: Clock;
  /** Whether NTP has synchronised the clock; default: systemd-timesyncd's flag below config.root. */
  syncProbe?: SyncProbe;
  version?: string;
  modules?: readonly AgentModule[];
  /** For the first-start device UUID; default crypto.randomUUID. */
  generateId?: () => string;
  /** How often an unsynchronised clock is re-checked for NTP sync (default 60 s). */
  clockSyncPollMs?: number;
}

export interface Agent extends AgentContext {
  readonly http: AgentHttpServer;
  readonly pairingTokenPath: string;
  start(): Promise<void>;
  /** Idempotent; safe to call from signal handlers and after a failed start. */
  stop(reason?: string): Promise<void>;
}

export const STORE_FILE = 'agent.db';

function prepareDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    // The directory holds the pairing token and the session table: owner only, even if it already existed.
    chmodSync(dataDir, 0o700);
  } catch (err) {
    throw new MnnEdgeError(
      'EDATADIR',
      `Cannot use data directory ${dataDir}: ${(err as Error).message} (set dataDir in the config, --data-dir, or MNN_EDGE_DATA_DIR)`,
    );
  }
}

/** Everything that reads the data dir or the board before the agent can serve; separate so a failure closes the store. */
function composeCore(config: AgentConfig, deps: AgentDeps, db: Db, logger: Logger, clock: Clock) {
  const kv = new KvStore(db);
  const time = createTrustedTime({
    kv,
    clock,
    probe: deps.syncProbe ?? timesyncdProbe(config.root),
    logger: logger.child('time'),
  });
  const identity = resolveDeviceIdentity({
    root: config.root,
    dataDir: config.dataDir,
    config,
    ...(deps.generateId ? { generateId: deps.generateId } : {}),
  });
  const pairing = ensurePairingToken(config.dataDir);
  const sessions = createSessionStore({
    db,
    pairingToken: pairing.token,
    now: () => time.trustedNow(),
    ttlMs: config.http.sessionTtlS * 1000,
  });
  const authenticator = createAuthenticator(pairing.token, sessions);
  const router = new HttpRouter();
  const http = createHttpServer({
    bind: config.http.bind,
    port: config.http.port,
    tls: config.http.tls,
    maxUploadBytes: config.http.maxUploadBytes,
    maxWsMessageBytes: config.http.maxWsMessageBytes,
    router,
    authenticator,
    logger: logger.child('http'),
  });
  return { kv, time, identity, pairing, sessions, authenticator, router, http };
}

export function createAgent(config: AgentConfig, deps: AgentDeps = {}): Agent {
  const logger = deps.logger ?? createLogger({ level: config.log.level, debug: config.log.debug });
  const clock = deps.clock ?? systemClock;
  const version = deps.version ?? '0.0.0';
  const modules = deps.modules ?? [];
  const events = new TypedEventEmitter<AgentEvents>();

  prepareDataDir(config.dataDir);
  const db = openStore(join(config.dataDir, STORE_FILE));
  let core: ReturnType<typeof composeCore>;
  try {
    core = composeCore(config, deps, db, logger, clock);
  } catch (err) {
    db.close();
    throw err;
  }
  const { kv, time, identity, pairing, sessions, authenticator, router, http } = core;

  registerCoreRoutes({
    router,
    version,
    clock,
    authenticator,
    sessions,
    limiter: createLoginLimiter({ clock }),
    sessionTtlMs: config.http.sessionTtlS * 1000,
    identity: () => identity,
    clockStatus: () => time.clockStatus(),
    logger: logger.child('auth'),
  });

  const context: AgentContext = { config, logger, db, kv, router, events, identity, time, clock };
  const started: AgentModule[] = [];
  let state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' = 'idle';
  let stopping: Promise<void> | undefined;
  let syncTimer: NodeJS.Timeout | undefined;

  const stop = (reason = 'stop requested'): Promise<void> => {
    stopping ??= (async () => {
      state = 'stopping';
      events.emit('stopping', { reason });
      logger.info('stopping', { reason });
      if (syncTimer !== undefined) clearInterval(syncTimer);
      await http.close();
      for (const m of started.reverse()) {
        try {
          await m.stop?.();
        } catch (err) {
          logger.error('module failed to stop', { module: m.name, err });
        }
      }
      time.stop();
      sessions.prune();
      db.close();
      state = 'stopped';
      logger.info('stopped', { reason });
      events.emit('stopped', { reason });
    })();
    return stopping;
  };

  const watchClockSync = () => {
    let announced = time.clockStatus().synchronized;
    // Polled on a (monotonic) Node timer: a cheap stat of timesyncd's flag; stops mattering once synchronised.
    syncTimer = setInterval(() => {
      if (announced) return;
      const status = time.clockStatus();
      if (!status.synchronized) return;
      announced = true;
      time.checkpoint();
      events.emit('clock.synchronized', { wallMs: status.wallMs });
    }, deps.clockSyncPollMs ?? 60_000);
    syncTimer.unref();
  };

  return {
    ...context,
    http,
    pairingTokenPath: pairing.path,
    async start() {
      if (state !== 'idle') throw new MnnEdgeError('ESTATE', `Agent cannot start while ${state}`);
      state = 'starting';
      try {
        time.start();
        watchClockSync();
        for (const m of modules) {
          try {
            await m.start({ ...context, logger: logger.child(m.name) });
          } catch (err) {
            throw new MnnEdgeError('EMODULE', `Module ${m.name} failed to start: ${(err as Error).message}`, {
              module: m.name,
            });
          }
          started.push(m);
        }
        await http.listen();
      } catch (err) {
        logger.error('start failed', { err });
        await stop('start failed');
        throw err;
      }
      state = 'running';
      logger.debug('routes', { routes: router.describe() });
      const clockStatus = time.clockStatus();
      logger.info('listening', {
        address: http.address,
        port: http.port,
        tls: http.secure,
        deviceId: identity.deviceId,
        deviceIdSource: identity.source,
        clock: clockStatus.state,
        dataDir: config.dataDir,
        pairingTokenCreated: pairing.created,
      });
      if (pairing.created) {
        logger.info('pairing token created; print it with `mnn-edge token`', { path: pairing.path });
      }
      events.emit('started', { port: http.port, address: http.address, deviceId: identity.deviceId });
    },
    stop,
  };
}
