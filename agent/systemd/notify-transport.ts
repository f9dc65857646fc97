import { spawn } from 'node:child_process';
import { MnnEdgeError } from '../../lib/errors.js';

// Node cannot send an AF_UNIX datagram, and NOTIFY_SOCKET is a SOCK_DGRAM socket, so each notification is
// handed to systemd-notify(1), which ships with systemd itself (no extra package in the image). The unit
// sets NotifyAccess=all because the sender is a child of the main process. systemd-notify (systemd >= 246)
// waits on a notification barrier before exiting, so PID 1 has read the message while the child's cgroup
// is still known: the old race where a short-lived sender's message was attributed to no unit is gone.
// docs/YOCTO.md ("sd_notify") compares this with the alternatives.

export interface NotifyTransport {
  /** Delivers one notification made of KEY=VALUE assignments; rejects with the reason it was not delivered. */
  send(assignments: readonly string[]): Promise<void>;
}

export interface SystemdNotifyTransportOptions {
  socket: string;
  /** The systemd-notify executable; a bare name is looked up on PATH. */
  command?: string;
  /** systemd-notify blocks on the barrier for up to 5 s itself; this bounds a wedged child. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

const STDERR_LIMIT = 2048;

export function createSystemdNotifyTransport(options: SystemdNotifyTransportOptions): NotifyTransport {
  const command = options.command ?? 'systemd-notify';
  const timeoutMs = options.timeoutMs ?? 10_000;
  // Only what systemd-notify reads: the child must not inherit the agent's secrets or a stale WATCHDOG_PID.
  const childEnv: NodeJS.ProcessEnv = { NOTIFY_SOCKET: options.socket };
  const path = (options.env ?? process.env)['PATH'];
  if (path !== undefined) childEnv['PATH'] = path;

  return {
    send(assignments) {
      return new Promise((resolve, reject) => {
        const child = spawn(command, [...assignments], {
          env: childEnv,
          stdio: ['ignore', 'ignore', 'pipe'],
          timeout: timeoutMs,
        });
        let stderr = '';
        child.stderr.setEncoding('utf8');
        child.stderr.on('data', (chunk: string) => {
          if (stderr.length < STDERR_LIMIT) stderr += chunk;
        });
        child.once('error', (err: NodeJS.ErrnoException) => {
          const hint = err.code === 'ENOENT' ? ` (${command} not found; it is part of systemd)` : '';
          reject(
            new MnnEdgeError('ENOTIFY', `Cannot run ${command}: ${err.message}${hint}`, undefined, {
              cause: err,
            }),
          );
        });
        child.once('close', (code, signal) => {
          if (code === 0) return resolve();
          const why = signal !== null ? `was killed by ${signal}` : `exited with status ${code}`;
          const detail = stderr.trim();
          reject(
            new MnnEdgeError(
              'ENOTIFY',
              `${command} ${assignments.join(' ')} ${why}${detail ? `: ${detail.slice(0, 300)}` : ''}`,
            ),
          );
        });
      });
    },
  };
}
