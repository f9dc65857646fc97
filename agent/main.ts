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
// after the HTTP server listens, so that /healthz and systemd's READY never wait for them (paths they have not
// registered yet answer 503 until they have), and stopped in reverse order before the store closes.

export interface AgentDeps {
  logger?: Logger;
  clock?: Clock;
  /** Whether NTP has synchronised the clock; default: systemd-timesyncd's flag below config.root. */
  syncProbe?: SyncProbe;
  version?: string;
  /**
   * Started in order after the HTTP server listens. A function is called then, so that the modules' code (and
   * what it imports) loads off the path to the first answer.
   */
  modules?: readonly AgentModule[] | (() => Promise<readonly AgentModule[]>);
  /** For the first-start device UUID; default crypto.randomUUID. */
  generateId?: () => string;
  /** How often an unsynchronised clock is re-checked for NTP sync (default 60 s). */
  clockSyncPollMs?: number;
}

/** Where a module's start stands; `/healthz` shows it while the agent serves. */
export type ModuleState = 'pending' | 'starting' | 'running' | 'failed' | 'stopped';

export interface Agent extends AgentContext {
  readonly http: AgentHttpServer;
  readonly pairingTokenPath: string;
  /**
   * Listens, then starts the modules in order; resolves once all have started. Until then /healthz answers
   * and paths no module has registered yet answer 503 (Retry-After), so a client can wait for them.
   */
  start(): Promise<void>;
  /** Resolves when the HTTP server answers (before the modules have started): systemd's READY point. */
  readonly serving: Promise<void>;
  /** Each module's state, in start order. */
  moduleStates(): Record<string, ModuleState>;
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
function composeCore(
  config: AgentConfig,
  deps: AgentDeps,
  db: Db,
  logger: Logger,
  clock: Clock,
  starting: () => boolean,
) {
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
    starting,
  });
  return { kv, time, identity, pairing, sessions, authenticator, router, http };
}

export function createAgent(config: AgentConfig, deps: AgentDeps = {}): Agent {
  const logger = deps.logger ?? createLogger({ level: config.log.level, debug: config.log.debug });
  const clock = deps.clock ?? systemClock;
  const version = deps.version ?? '0.0.0';
  const events = new TypedEventEmitter<AgentEvents>();
  const states = new Map<string, ModuleState>();
  let modulesStarting = true;
  let markServing!: () => void;
  const serving = new Promise<void>((resolve) => {
    markServing = resolve;
  });

  prepareDataDir(config.dataDir);
  const db = openStore(join(config.dataDir, STORE_FILE));
  let core: ReturnType<typeof composeCore>;
  try {
    core = composeCore(config, deps, db, logger, clock, () => modulesStarting);
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
    modules: () => Object.fromEntries(states),
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
        states.set(m.name, 'stopped');
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
    serving,
    moduleStates: () => Object.fromEntries(states),
    async start() {
      if (state !== 'idle') throw new MnnEdgeError('ESTATE', `Agent cannot start while ${state}`);
      state = 'starting';
      // The start's timeline in the log: ms since this process began (what bench/startup prints).
      const at = () => Math.round(performance.now());
      try {
        time.start();
        watchClockSync();
        await http.listen();
        const mem = process.memoryUsage();
        logger.info('serving', {
          atMs: at(),
          address: http.address,
          port: http.port,
          rssMb: Math.round(mem.rss / 1e5) / 10,
          heapMb: Math.round(mem.heapUsed / 1e5) / 10,
        });
        markServing();
        const list = typeof deps.modules === 'function' ? await deps.modules() : (deps.modules ?? []);
        const loaded = process.memoryUsage();
        logger.info('modules loaded', {
          atMs: at(),
          modules: list.map((m) => m.name),
          rssMb: Math.round(loaded.rss / 1e5) / 10,
          heapMb: Math.round(loaded.heapUsed / 1e5) / 10,
        });
        for (const m of list) states.set(m.name, 'pending');
        for (const m of list) {
          if (state !== 'starting') break;
          const t0 = performance.now();
          states.set(m.name, 'starting');
          try {
            await m.start({ ...context, logger: logger.child(m.name) });
          } catch (err) {
            states.set(m.name, 'failed');
            throw new MnnEdgeError('EMODULE', `Module ${m.name} failed to start: ${(err as Error).message}`, {
              module: m.name,
            });
          }
          states.set(m.name, 'running');
          started.push(m);
          // RSS and heap after each module: what each one added, for bench/idle's attribution.
          const mem = process.memoryUsage();
          logger.info('module started', {
            module: m.name,
            atMs: at(),
            tookMs: Math.round(performance.now() - t0),
            rssMb: Math.round(mem.rss / 1e5) / 10,
            heapMb: Math.round(mem.heapUsed / 1e5) / 10,
          });
        }
        modulesStarting = false;
      } catch (err) {
        logger.error('start failed', { err });
        await stop('start failed');
        throw err;
      }
      if (state !== 'starting') return;
      state = 'running';
      logger.debug('routes', { routes: router.describe() });
      const clockStatus = time.clockStatus();
      logger.info('listening', {
        atMs: at(),
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
