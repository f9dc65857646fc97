import { errorMessage, invalidParameter, MnnEdgeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { notifyAssignment, parseNotifyEnvironment } from './notify-env.js';
import { createSystemdNotifyTransport, type NotifyTransport } from './notify-transport.js';

// The agent's side of a Type=notify unit: READY=1 once it serves, STATUS= lines for `systemctl status`,
// WATCHDOG=1 while the main loop is healthy, STOPPING=1 on the way out. Outside systemd (no NOTIFY_SOCKET)
// every call is a cheap no-op, so the composition root wires it unconditionally.

export interface SystemdNotifier {
  /** True when started by systemd with a notify socket. */
  readonly enabled: boolean;
  /** How often WATCHDOG=1 is sent (half the unit's WatchdogSec, as sd_watchdog_enabled(3) advises), or undefined. */
  readonly watchdogIntervalMs: number | undefined;
  /** Resolves true when the notification was delivered (false when disabled or it failed; failures are logged). */
  ready(): Promise<boolean>;
  status(text: string): Promise<boolean>;
  /**
   * Pings the watchdog every interval while `loopHealthy()` says the main loop is making progress. A stalled
   * loop (or a blocked event loop, where the timer cannot fire) stops the pings and systemd restarts the unit.
   * Returns false when the unit has no watchdog for this process.
   */
  startWatchdog(loopHealthy: () => boolean): boolean;
  /** Stops the watchdog and sends STOPPING=1. */
  stopping(): Promise<boolean>;
}

export interface Scheduler {
  /** Calls `fn` every `ms` without keeping the process alive; returns a cancel function. */
  every(ms: number, fn: () => void): () => void;
}

export const timerScheduler: Scheduler = {
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return () => clearInterval(handle);
  },
};

export interface SystemdNotifierOptions {
  env: NodeJS.ProcessEnv;
  logger: Logger;
  pid?: number;
  /** Defaults to systemd-notify(1) on NOTIFY_SOCKET. */
  transport?: NotifyTransport;
  scheduler?: Scheduler;
}

export function createSystemdNotifier(options: SystemdNotifierOptions): SystemdNotifier {
  const log = options.logger.child('systemd');
  const { socket, watchdogMs } = parseNotifyEnvironment(options.env, options.pid ?? process.pid);
  const transport =
    socket === undefined
      ? undefined
      : (options.transport ?? createSystemdNotifyTransport({ socket, env: options.env }));
  const scheduler = options.scheduler ?? timerScheduler;
  const watchdogIntervalMs = watchdogMs === undefined ? undefined : Math.max(1, Math.floor(watchdogMs / 2));

  // One notification at a time, in call order: READY=1 must not overtake the STATUS= sent before it.
  let queue: Promise<unknown> = Promise.resolve();
  let cancelWatchdog: (() => void) | undefined;
  let watchdogPending = false;
  let loopWasHealthy = true;

  const send = (assignments: string[]): Promise<boolean> => {
    if (transport === undefined) return Promise.resolve(false);
    const delivery = queue.then(() => transport.send(assignments));
    queue = delivery.catch(() => undefined);
    return delivery.then(
      () => true,
      (err: unknown) => {
        log.warn('sd_notify failed', { message: assignments.join(' '), error: errorMessage(err) });
        return false;
      },
    );
  };

  const pingIfHealthy = (loopHealthy: () => boolean): void => {
    let healthy: boolean;
    try {
      healthy = loopHealthy();
    } catch (err) {
      log.error('watchdog health check threw; treating the loop as stalled', { error: errorMessage(err) });
      healthy = false;
    }
    if (healthy !== loopWasHealthy) {
      if (healthy) log.info('main loop recovered; resuming WATCHDOG=1');
      else log.warn('main loop stalled; withholding WATCHDOG=1 so systemd restarts the agent');
      loopWasHealthy = healthy;
    }
    // A slow systemd-notify must not pile up children: skip this tick while the last ping is in flight.
    if (!healthy || watchdogPending) return;
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
      if (typeof text !== 'string') return Promise.reject(invalidParameter('status text', 'a string', text));
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
