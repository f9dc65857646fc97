import { type Clock, systemClock } from '../../lib/clock.js';
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
  /**
   * Until READY=1: while the event loop runs, asks systemd for more start time (EXTEND_TIMEOUT_USEC) a step at a
   * time, up to a cap. A start that is slow but alive (a board whose CPU is busy, a long migration) is not killed
   * at TimeoutStartSec; a process that hangs or blocks its loop still is. Returns false outside systemd.
   */
  extendStartWhileAlive(): boolean;
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
  /** How far each extension reaches and how often one is sent; defaults to START_EXTENSION. */
  startExtension?: StartExtension;
  clock?: Pick<Clock, 'monotonicMs'>;
}

export interface StartExtension {
  /** Each EXTEND_TIMEOUT_USEC asks for this much time from now. */
  stepMs: number;
  /** Sent this often, well inside a step, so one late timer or slow systemd-notify does not lose the start. */
  everyMs: number;
  /** No extension is asked for past this much time after extendStartWhileAlive(): a start wedged on an await
   *  with a live loop still ends. */
  capMs: number;
}

/** The unit's TimeoutStartSec (180 s) bounds a start that makes no progress; a live one may take up to 15 min
 *  (an emulated board at load 15 took 266 s from power-on to serving, with the kernel's boot in it). */
export const START_EXTENSION: StartExtension = { stepMs: 90_000, everyMs: 30_000, capMs: 15 * 60_000 };

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
  let cancelExtension: (() => void) | undefined;
  let readySent = false;

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
    ready: () => {
      readySent = true;
      cancelExtension?.();
      cancelExtension = undefined;
      return send(['READY=1']);
    },
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
    extendStartWhileAlive() {
      if (transport === undefined || readySent || cancelExtension !== undefined) return false;
      const { stepMs, everyMs, capMs } = options.startExtension ?? START_EXTENSION;
      const clock = options.clock ?? systemClock;
      const startedAt = clock.monotonicMs();
      const extend = () => {
        const left = capMs - (clock.monotonicMs() - startedAt);
        if (left <= 0) {
          cancelExtension?.();
          cancelExtension = undefined;
          log.warn('the start is still not serving; asking systemd for no more time', { capMs });
          return;
        }
        void send([`EXTEND_TIMEOUT_USEC=${Math.round(Math.min(stepMs, left) * 1000)}`]);
      };
      cancelExtension = scheduler.every(everyMs, extend);
      extend();
      return true;
    },
    stopping() {
      cancelExtension?.();
      cancelExtension = undefined;
      cancelWatchdog?.();
      cancelWatchdog = undefined;
      return send(['STOPPING=1']);
    },
  };
}
