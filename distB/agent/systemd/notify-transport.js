import { spawn } from 'node:child_process';
import { MnnEdgeError } from '../common/errors.js';
const STDERR_LIMIT = 2048;
export function createSystemdNotifyTransport(options) {
    const command = options.command ?? 'systemd-notify';
    const timeoutMs = options.timeoutMs ?? 10_000;
    // Only what systemd-notify reads: the child must not inherit the agent's secrets or a stale WATCHDOG_PID.
    const childEnv = { NOTIFY_SOCKET: options.socket };
    const path = (options.env ?? process.env)['PATH'];
    if (path !== undefined)
        childEnv['PATH'] = path;
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
                child.stderr.on('data', (chunk) => {
                    if (stderr.length < STDERR_LIMIT)
                        stderr += chunk;
                });
                child.once('error', (err) => {
                    const hint = err.code === 'ENOENT' ? ` (${command} not found; it is part of systemd)` : '';
                    reject(new MnnEdgeError('ENOTIFY', `Cannot run ${command}: ${err.message}${hint}`, undefined, {
                        cause: err,
                    }));
                });
                child.once('close', (code, signal) => {
                    if (code === 0)
                        return resolve();
                    const why = signal !== null ? `was killed by ${signal}` : `exited with status ${code}`;
                    const detail = stderr.trim();
                    reject(new MnnEdgeError('ENOTIFY', `${command} ${assignments.join(' ')} ${why}${detail ? `: ${detail.slice(0, 300)}` : ''}`));
                });
            });
        },
    };
}
//# sourceMappingURL=notify-transport.js.map