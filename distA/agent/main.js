import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from './common/clock.js';
import { MnnEdgeError } from './common/errors.js';
import { createLogger } from './common/log.js';
import { TypedEventEmitter } from './common/typed-events.js';
import { createAuthenticator } from './http/auth.js';
import { registerCoreRoutes } from './http/core-routes.js';
import { createLoginLimiter } from './http/login-limiter.js';
import { ensurePairingToken } from './http/pairing-token.js';
import { HttpRouter } from './http/router.js';
import { createHttpServer } from './http/server.js';
import { createSessionStore } from './http/sessions.js';
import { resolveDeviceIdentity } from './identity/device-identity.js';
import { KvStore, openStore } from './store/database.js';
import { timesyncdProbe } from './time/sync-probe.js';
import { createTrustedTime } from './time/trusted-time.js';
export const STORE_FILE = 'agent.db';
function prepareDataDir(dataDir) {
    try {
        mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        // The directory holds the pairing token and the session table: owner only, even if it already existed.
        chmodSync(dataDir, 0o700);
    }
    catch (err) {
        throw new MnnEdgeError('EDATADIR', `Cannot use data directory ${dataDir}: ${err.message} (set dataDir in the config, --data-dir, or MNN_EDGE_DATA_DIR)`);
    }
}
/** Everything that reads the data dir or the board before the agent can serve; separate so a failure closes the store. */
function composeCore(config, deps, db, logger, clock, starting) {
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
function memoryFigures() {
    const mem = process.memoryUsage();
    return { rssMb: Math.round(mem.rss / 1e5) / 10, heapMb: Math.round(mem.heapUsed / 1e5) / 10 };
}
/** The start's timeline in the log: ms since this process began (what bench/startup prints). */
const sinceProcessStart = () => Math.round(performance.now());
/** Emits `clock.synchronized` once NTP has synchronised the clock; the returned timer is cleared on stop. */
function watchClockSync(time, events, pollMs) {
    let announced = time.clockStatus().synchronized;
    // Polled on a (monotonic) Node timer: a cheap stat of timesyncd's flag; stops mattering once synchronised.
    const timer = setInterval(() => {
        if (announced)
            return;
        const status = time.clockStatus();
        if (!status.synchronized)
            return;
        announced = true;
        time.checkpoint();
        events.emit('clock.synchronized', { wallMs: status.wallMs });
    }, pollMs);
    timer.unref();
    return timer;
}
/** Starts the modules in order; stops early once `starting()` turns false (a stop came in meanwhile). */
async function startModules(list, context, ledger, starting) {
    for (const m of list)
        ledger.states.set(m.name, 'pending');
    for (const m of list) {
        if (!starting())
            break;
        const t0 = performance.now();
        ledger.states.set(m.name, 'starting');
        try {
            await m.start({ ...context, logger: context.logger.child(m.name) });
        }
        catch (err) {
            ledger.states.set(m.name, 'failed');
            throw new MnnEdgeError('EMODULE', `Module ${m.name} failed to start: ${err.message}`, {
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
/** Closes the server, stops the started modules in reverse, then the clock, sessions and store. */
async function shutDown(core, db, ledger, logger) {
    await core.http.close();
    for (const m of ledger.started.reverse()) {
        ledger.states.set(m.name, 'stopped');
        try {
            await m.stop?.();
        }
        catch (err) {
            logger.error('module failed to stop', { module: m.name, err });
        }
    }
    core.time.stop();
    core.sessions.prune();
    db.close();
}
/** The line an operator looks for once everything started, and the one-time pairing hint. */
function logListening(config, core, logger) {
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
function openCore(config, deps, logger, clock, starting) {
    prepareDataDir(config.dataDir);
    const db = openStore(join(config.dataDir, STORE_FILE));
    try {
        return { db, core: composeCore(config, deps, db, logger, clock, starting) };
    }
    catch (err) {
        db.close();
        throw err;
    }
}
export function createAgent(config, deps = {}) {
    const logger = deps.logger ?? createLogger({ level: config.log.level, debug: config.log.debug });
    const clock = deps.clock ?? systemClock;
    const version = deps.version ?? '0.0.0';
    const events = new TypedEventEmitter();
    const ledger = { states: new Map(), started: [] };
    let modulesStarting = true;
    let markServing;
    const serving = new Promise((resolve) => {
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
        logger: logger.child('auth'),
    });
    const context = { config, logger, db, kv, router, events, identity, time, clock };
    let state = 'idle';
    let stopping;
    let syncTimer;
    const stop = (reason = 'stop requested') => {
        stopping ??= (async () => {
            state = 'stopping';
            events.emit('stopping', { reason });
            logger.info('stopping', { reason });
            if (syncTimer !== undefined)
                clearInterval(syncTimer);
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
            if (state !== 'idle')
                throw new MnnEdgeError('ESTATE', `Agent cannot start while ${state}`);
            state = 'starting';
            try {
                time.start();
                syncTimer = watchClockSync(time, events, deps.clockSyncPollMs ?? 60_000);
                await http.listen();
                logger.info('serving', {
                    atMs: sinceProcessStart(),
                    address: http.address,
                    port: http.port,
                    ...memoryFigures(),
                });
                markServing();
                const list = typeof deps.modules === 'function' ? await deps.modules() : (deps.modules ?? []);
                logger.info('modules loaded', {
                    atMs: sinceProcessStart(),
                    modules: list.map((m) => m.name),
                    ...memoryFigures(),
                });
                await startModules(list, context, ledger, () => state === 'starting');
                modulesStarting = false;
            }
            catch (err) {
                logger.error('start failed', { err });
                await stop('start failed');
                throw err;
            }
            if (state !== 'starting')
                return;
            state = 'running';
            logger.debug('routes', { routes: router.describe() });
            logListening(config, core, logger);
            events.emit('started', { port: http.port, address: http.address, deviceId: identity.deviceId });
        },
        stop,
    };
}
//# sourceMappingURL=main.js.map