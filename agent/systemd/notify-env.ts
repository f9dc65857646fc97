import { MnnEdgeError } from '../../lib/errors.js';

// What systemd tells a Type=notify service through its environment (sd_notify(3), sd_watchdog_enabled(3)).

export interface NotifyEnvironment {
  /** Where to send notifications; undefined when not started by systemd (development, tests). */
  socket: string | undefined;
  /** Watchdog timeout for this process, or undefined when the unit has no WatchdogSec or it is meant for another PID. */
  watchdogMs: number | undefined;
}

function parseSocket(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  // Absolute path, abstract namespace (@name) or AF_VSOCK (systemd 254+ for VMs); anything else is a misconfiguration.
  if (raw.startsWith('/') || raw.startsWith('@') || /^vsock(-stream|-dgram|-seqpacket)?:/.test(raw))
    return raw;
  throw new MnnEdgeError(
    'ENOTIFY',
    `NOTIFY_SOCKET must be an absolute path, @abstract or vsock:CID:PORT address, got ${JSON.stringify(raw)}`,
  );
}

function parseWatchdog(
  usecRaw: string | undefined,
  pidRaw: string | undefined,
  pid: number,
): number | undefined {
  if (usecRaw === undefined || usecRaw === '') return undefined;
  if (!/^[0-9]+$/.test(usecRaw) || Number(usecRaw) === 0) {
    throw new MnnEdgeError(
      'ENOTIFY',
      `WATCHDOG_USEC must be a positive integer (microseconds), got ${JSON.stringify(usecRaw)}`,
    );
  }
  if (pidRaw !== undefined && pidRaw !== '') {
    if (!/^[0-9]+$/.test(pidRaw)) {
      throw new MnnEdgeError('ENOTIFY', `WATCHDOG_PID must be a process id, got ${JSON.stringify(pidRaw)}`);
    }
    // The variables were inherited by a child of the main process: the watchdog is not ours to feed.
    if (Number(pidRaw) !== pid) return undefined;
  }
  return Math.max(1, Math.floor(Number(usecRaw) / 1000));
}

export function parseNotifyEnvironment(env: NodeJS.ProcessEnv, pid: number): NotifyEnvironment {
  const socket = parseSocket(env['NOTIFY_SOCKET']);
  const watchdogMs = parseWatchdog(env['WATCHDOG_USEC'], env['WATCHDOG_PID'], pid);
  return { socket, watchdogMs: socket === undefined ? undefined : watchdogMs };
}

/** A notification is newline-separated KEY=VALUE lines; a newline inside a value would forge another key. */
export function notifyAssignment(key: string, value: string): string {
  if (!/^[A-Z][A-Z0-9_]*$/.test(key)) {
    throw new MnnEdgeError(
      'EINVAL',
      `sd_notify key must be upper-case A-Z, 0-9 or _, got ${JSON.stringify(key)}`,
    );
  }
  return `${key}=${value.replace(/[\r\n]+/g, ' ').trim()}`;
}
