import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, systemClock } from '../lib/clock.js';
import { MnnEdgeError } from '../lib/errors.js';
import { createLogger, type Logger } from '../lib/log.js';
import { TypedEventEmitter } from '../lib/typed-events.js';
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
  /** More for /healthz (the run-time settings' state). */
  healthDetails?: () => Record<string, unknown>;
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

/** RSS and heap in MB, one decimal: logged at each start step so bench/idle can attribute what each added. */
function memoryFigures(): { rssMb: number; heapMb: number } {
  const mem = process.memoryUsage();
  return { rssMb: Math.round(mem.rss / 1e5) / 10, heapMb: Math.round(mem.heapUsed / 1e5) / 10 };
}

/** The start's timeline in the log: ms since this process began (what bench/startup prints). */
const sinceProcessStart = () => Math.round(performance.now());

/** Emits `clock.synchronized` once NTP has synchronised the clock; the returned timer is cleared on stop. */
function watchClockSync(
  time: AgentContext['time'],
  events: AgentContext['events'],
  pollMs: number,
): NodeJS.Timeout {
  let announced = time.clockStatus().synchronized;
  // Polled on a (monotonic) Node timer: a cheap stat of timesyncd's flag; stops mattering once synchronised.
  const timer = setInterval(() => {
    if (announced) return;
    const status = time.clockStatus();
    if (!status.synchronized) return;
    announced = true;
    time.checkpoint();
    events.emit('clock.synchronized', { wallMs: status.wallMs });
  }, pollMs);
  timer.unref();
  return timer;
}

/** Where the modules stand: each one's state for /healthz, and those started (stopped in reverse). */
interface ModuleLedger {
  readonly states: Map<string, ModuleState>;
  readonly started: AgentModule[];
}

/** Starts the modules in order; stops early once `starting()` turns false (a stop came in meanwhile). */
async function startModules(
  list: readonly AgentModule[],
  context: AgentContext,
  ledger: ModuleLedger,
  starting: () => boolean,
): Promise<void> {
  for (const m of list) ledger.states.set(m.name, 'pending');
  for (const m of list) {
    if (!starting()) break;
    const t0 = performance.now();
    ledger.states.set(m.name, 'starting');
    try {
      await m.start({ ...context, logger: context.logger.child(m.name) });
    } catch (err) {
      ledger.states.set(m.name, 'failed');
      throw new MnnEdgeError('EMODULE', `Module ${m.name} failed to start: ${(err as Error).message}`, {
        module: m.name,
      });
    }
    ledger.states.set(m.name, 'running');
    ledger.started.push(m);
    context.logger.info('module started', {
      module: m.name,
      atMs: sinceProcessStart(),
      tookMs: Math.round(performance.now() - t0),
      ...memoryFigures(),
    });
  }
}

/**
 * The start's two steps: serve HTTP (/healthz answers from here on, `serving` is marked), then load the modules
 * and start them in order. Each step is logged with the time since the process began and the memory it took.
 */
async function serveThenStartModules(
  http: ReturnType<typeof composeCore>['http'],
  modules: AgentDeps['modules'],
  context: AgentContext,
  ledger: ModuleLedger,
  on: { serving: () => void; starting: () => boolean },
): Promise<void> {
  const { logger } = context;
  await http.listen();
  logger.info('serving', {
    atMs: sinceProcessStart(),
    address: http.address,
    port: http.port,
    ...memoryFigures(),
  });
  on.serving();
  const list = typeof modules === 'function' ? await modules() : (modules ?? []);
  logger.info('modules loaded', {
    atMs: sinceProcessStart(),
    modules: list.map((m) => m.name),
    ...memoryFigures(),
  });
  await startModules(list, context, ledger, on.starting);
}

/** Closes the server, stops the started modules in reverse, then the clock, sessions and store. */
async function shutDown(
  core: ReturnType<typeof composeCore>,
  db: Db,
  ledger: ModuleLedger,
  logger: Logger,
): Promise<void> {
  await core.http.close();
  for (const m of ledger.started.reverse()) {
    ledger.states.set(m.name, 'stopped');
    try {
      await m.stop?.();
    } catch (err) {
      logger.error('module failed to stop', { module: m.name, err });
    }
  }
  core.time.stop();
  core.sessions.prune();
  db.close();
}

/** The line an operator looks for once everything started, and the one-time pairing hint. */
function logListening(config: AgentConfig, core: ReturnType<typeof composeCore>, logger: Logger): void {
  const { http, identity, pairing, time } = core;
  logger.info('listening', {
    atMs: sinceProcessStart(),
    address: http.address,
    port: http.port,
    tls: http.secure,
    deviceId: identity.deviceId,
    deviceIdSource: identity.source,
    clock: time.clockStatus().state,
    dataDir: config.dataDir,
    pairingTokenCreated: pairing.created,
  });
  if (pairing.created) {
    logger.info('pairing token created; print it with `mnn-edge token`', { path: pairing.path });
  }
}

/** Opens the store and builds the core; a failure while building closes the store again. */
function openCore(
  config: AgentConfig,
  deps: AgentDeps,
  logger: Logger,
  clock: Clock,
  starting: () => boolean,
) {
  prepareDataDir(config.dataDir);
  const db = openStore(join(config.dataDir, STORE_FILE));
  try {
    return { db, core: composeCore(config, deps, db, logger, clock, starting) };
  } catch (err) {
    db.close();
    throw err;
  }
}

export function createAgent(config: AgentConfig, deps: AgentDeps = {}): Agent {
  const logger = deps.logger ?? createLogger({ level: config.log.level, debug: config.log.debug });
  const clock = deps.clock ?? systemClock;
  const version = deps.version ?? '0.0.0';
  const events = new TypedEventEmitter<AgentEvents>();
  const ledger: ModuleLedger = { states: new Map(), started: [] };
  let modulesStarting = true;
  let markServing!: () => void;
  const serving = new Promise<void>((resolve) => {
    markServing = resolve;
  });

  const { db, core } = openCore(config, deps, logger, clock, () => modulesStarting);
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
    modules: () => Object.fromEntries(ledger.states),
    ...(deps.healthDetails ? { details: deps.healthDetails } : {}),
    logger: logger.child('auth'),
  });

  const context: AgentContext = { config, logger, db, kv, router, events, identity, time, clock };
  let state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' = 'idle';
  let stopping: Promise<void> | undefined;
  let syncTimer: NodeJS.Timeout | undefined;

  const stop = (reason = 'stop requested'): Promise<void> => {
    stopping ??= (async () => {
      state = 'stopping';
      events.emit('stopping', { reason });
      logger.info('stopping', { reason });
      if (syncTimer !== undefined) clearInterval(syncTimer);
      await shutDown(core, db, ledger, logger);
      state = 'stopped';
      logger.info('stopped', { reason });
      events.emit('stopped', { reason });
    })();
    return stopping;
  };

  return {
    ...context,
    http,
    pairingTokenPath: pairing.path,
    serving,
    moduleStates: () => Object.fromEntries(ledger.states),
    async start() {
      if (state !== 'idle') throw new MnnEdgeError('ESTATE', `Agent cannot start while ${state}`);
      state = 'starting';
      try {
        time.start();
        syncTimer = watchClockSync(time, events, deps.clockSyncPollMs ?? 60_000);
        await serveThenStartModules(http, deps.modules, context, ledger, {
          serving: markServing,
          starting: () => state === 'starting',
        });
        modulesStarting = false;
      } catch (err) {
        // The stack too: a start that fails on a programming error (a TypeError from a bundled package, seen in
        // the system tier) is otherwise a message without a place.
        logger.error('start failed', { err, stack: err instanceof Error ? err.stack : undefined });
        await stop('start failed');
        throw err;
      }
      if (state !== 'starting') return;
      state = 'running';
      logger.debug('routes', { routes: router.describe() });
      logListening(config, core, logger);
      events.emit('started', { port: http.port, address: http.address, deviceId: identity.deviceId });
    },
    stop,
  };
}
