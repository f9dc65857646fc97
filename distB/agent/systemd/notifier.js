import { errorMessage, invalidParameter, MnnEdgeError } from '../common/errors.js';
import { notifyAssignment, parseNotifyEnvironment } from './notify-env.js';
import { createSystemdNotifyTransport } from './notify-transport.js';
export const timerScheduler = {
    every(ms, fn) {
        const handle = setInterval(fn, ms);
        handle.unref();
        return () => clearInterval(handle);
    },
};
export function createSystemdNotifier(options) {
    const log = options.logger.child('systemd');
    const { socket, watchdogMs } = parseNotifyEnvironment(options.env, options.pid ?? process.pid);
    const transport = socket === undefined
        ? undefined
        : (options.transport ?? createSystemdNotifyTransport({ socket, env: options.env }));
    const scheduler = options.scheduler ?? timerScheduler;
    const watchdogIntervalMs = watchdogMs === undefined ? undefined : Math.max(1, Math.floor(watchdogMs / 2));
    // One notification at a time, in call order: READY=1 must not overtake the STATUS= sent before it.
    let queue = Promise.resolve();
    let cancelWatchdog;
    let watchdogPending = false;
    let loopWasHealthy = true;
    const send = (assignments) => {
        if (transport === undefined)
            return Promise.resolve(false);
        const delivery = queue.then(() => transport.send(assignments));
        queue = delivery.catch(() => undefined);
        return delivery.then(() => true, (err) => {
            log.warn('sd_notify failed', { message: assignments.join(' '), error: errorMessage(err) });
            return false;
        });
    };
    const pingIfHealthy = (loopHealthy) => {
        let healthy;
        try {
            healthy = loopHealthy();
        }
        catch (err) {
            log.error('watchdog health check threw; treating the loop as stalled', { error: errorMessage(err) });
            healthy = false;
        }
        if (healthy !== loopWasHealthy) {
            if (healthy)
                log.info('main loop recovered; resuming WATCHDOG=1');
            else
                log.warn('main loop stalled; withholding WATCHDOG=1 so systemd restarts the agent');
            loopWasHealthy = healthy;
        }
        // A slow systemd-notify must not pile up children: skip this tick while the last ping is in flight.
        if (!healthy || watchdogPending)
            return;
        watchdogPending = true;
        void send(['WATCHDOG=1']).finally(() => {
            watchdogPending = false;
        });
    };
    return {
        enabled: transport !== undefined,
        watchdogIntervalMs,
        ready: () => send(['READY=1']),
        status: (text) => {
            // Typed callers cannot get here; plain-JS ones (and `unknown` casts) get a specific error.
            if (typeof text !== 'string')
                return Promise.reject(invalidParameter('status text', 'a string', text));
            return send([notifyAssignment('STATUS', text)]);
        },
        startWatchdog(loopHealthy) {
            if (cancelWatchdog !== undefined) {
                throw new MnnEdgeError('ESTATE', 'the systemd watchdog is already running');
            }
            if (watchdogIntervalMs === undefined) {
                log.debug('no systemd watchdog for this process (WatchdogSec unset or meant for another PID)');
                return false;
            }
            cancelWatchdog = scheduler.every(watchdogIntervalMs, () => pingIfHealthy(loopHealthy));
            log.info('systemd watchdog started', { intervalMs: watchdogIntervalMs });
            pingIfHealthy(loopHealthy);
            return true;
        },
        stopping() {
            cancelWatchdog?.();
            cancelWatchdog = undefined;
            return send(['STOPPING=1']);
        },
    };
}
//# sourceMappingURL=notifier.js.map