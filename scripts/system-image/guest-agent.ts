// Runs commands inside the booted guest through QEMU's guest agent (qemu-guest-agent in the image, a virtio-serial
// port on the host side as a unix socket): guest-exec with captured output. No ssh keys, and it works before and
// after the guest's network is up.
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface GuestResult {
  exitcode: number;
  stdout: string;
  stderr: string;
}

/** One JSON request, one JSON reply (the agent answers requests in order, one line each). */
async function request(socketPath: string, body: object, budgetMs: number): Promise<unknown> {
  const socket: Socket = connect(socketPath);
  socket.setEncoding('utf8');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    // guest-sync-delimited flushes whatever a previous, interrupted client left in the channel: the reply to it is
    // preceded by 0xFF, and everything before that byte is stale.
    const id = Math.floor(Math.random() * 2 ** 31);
    socket.write(`${JSON.stringify({ execute: 'guest-sync-delimited', arguments: { id } })}\n`);
    socket.write(`${JSON.stringify(body)}\n`);
    let buffer = '';
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`guest agent: no answer in ${budgetMs} ms`)), budgetMs);
      socket.on('data', (chunk: string) => {
        buffer += chunk;
        const start = buffer.lastIndexOf('\xff');
        // Only whole lines: a large reply (guest-exec output) arrives in several chunks.
        const lines = buffer
          .slice(start + 1)
          .split('\n')
          .slice(0, -1)
          .filter((l) => l.trim() !== '');
        if (lines.length < 2) return;
        clearTimeout(timer);
        try {
          const reply = JSON.parse(lines[1]!) as { return?: unknown; error?: { desc?: string } };
          if (reply.error)
            reject(new Error(`guest agent: ${reply.error.desc ?? JSON.stringify(reply.error)}`));
          else resolve(reply.return);
        } catch (err) {
          reject(err);
        }
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  } finally {
    socket.destroy();
  }
}

/** Waits until the guest agent answers (the guest has booted far enough to start it). */
export async function waitForGuestAgent(socketPath: string, budgetMs: number): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await request(socketPath, { execute: 'guest-ping' }, 10_000);
      return;
    } catch (err) {
      last = err;
      await sleep(2000);
    }
  }
  throw new Error(`the guest agent did not answer in ${budgetMs / 1000} s: ${String(last)}`);
}

/** Runs `sh -c script` in the guest as root and returns its exit code and output. */
export async function guestExec(
  socketPath: string,
  script: string,
  budgetMs = 120_000,
): Promise<GuestResult> {
  const started = (await request(
    socketPath,
    { execute: 'guest-exec', arguments: { path: '/bin/sh', arg: ['-c', script], 'capture-output': true } },
    30_000,
  )) as { pid: number };
  const deadline = Date.now() + budgetMs;
  while (Date.now() < deadline) {
    const status = (await request(
      socketPath,
      { execute: 'guest-exec-status', arguments: { pid: started.pid } },
      30_000,
    )) as { exited: boolean; exitcode?: number; 'out-data'?: string; 'err-data'?: string };
    if (status.exited) {
      const text = (b64?: string) => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : '');
      return {
        exitcode: status.exitcode ?? -1,
        stdout: text(status['out-data']),
        stderr: text(status['err-data']),
      };
    }
    await sleep(1000);
  }
  throw new Error(`guest command did not finish in ${budgetMs / 1000} s: ${script}`);
}
