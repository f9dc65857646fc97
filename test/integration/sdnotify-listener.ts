import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

// A real NOTIFY_SOCKET for tests: python3 binds an AF_UNIX datagram socket (what PID 1 does) and prints one
// JSON line per notification with the sender's pid from SCM_CREDENTIALS. It closes any fd passed with a
// message, which is how PID 1 answers systemd-notify's barrier (BARRIER=1 + a pipe fd).
const LISTENER_PY = `
import json, os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
print(json.dumps({"listening": path}), flush=True)
while True:
    data, anc, flags, addr = s.recvmsg(65536, socket.CMSG_SPACE(4 * 16) + socket.CMSG_SPACE(12))
    pid = None
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for i in range(0, len(payload) - len(payload) % 4, 4):
                os.close(int.from_bytes(payload[i:i + 4], sys.byteorder))
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = int.from_bytes(payload[0:4], sys.byteorder)
    print(json.dumps({"data": data.decode("utf-8", "replace"), "pid": pid}), flush=True)
`;

export interface Notification {
  /** The datagram as sent: newline-separated KEY=VALUE lines. */
  data: string;
  pid: number | null;
}

export interface NotifyListener {
  path: string;
  received: Notification[];
  /** Resolves with the first notification (past or future) whose text contains `assignment` as a line. */
  waitFor(assignment: string, timeoutMs?: number): Promise<Notification>;
  close(): Promise<void>;
}

export async function startNotifyListener(path: string): Promise<NotifyListener> {
  const child: ChildProcess = spawn('python3', ['-c', LISTENER_PY, path], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const received: Notification[] = [];
  const waiters: { assignment: string; resolve: (n: Notification) => void }[] = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const lines = createInterface({ input: child.stdout! });
  const listening = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`notify listener exited with ${code}: ${stderr.trim()}`)));
    lines.on('line', (line) => {
      const msg = JSON.parse(line) as Partial<Notification> & { listening?: string };
      if (msg.listening !== undefined) return resolve();
      const n = { data: msg.data ?? '', pid: msg.pid ?? null };
      received.push(n);
      for (const w of [...waiters]) {
        if (n.data.split('\n').includes(w.assignment)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(n);
        }
      }
    });
  });
  await listening;
  return {
    path,
    received,
    waitFor(assignment, timeoutMs = 10_000) {
      const seen = received.find((n) => n.data.split('\n').includes(assignment));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const got = received.map((n) => JSON.stringify(n.data)).join(', ') || 'nothing';
          reject(new Error(`no ${assignment} on ${path} within ${timeoutMs} ms; received ${got}`));
        }, timeoutMs);
        waiters.push({
          assignment,
          resolve: (n) => {
            clearTimeout(timer);
            resolve(n);
          },
        });
      });
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
