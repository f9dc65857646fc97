// The host's requests to the agent in the guest, through QEMU's forwarded port. One TCP connection per request:
// a kept-alive connection races the agent's idle close (Node's 5 s keep-alive) once QEMU's user-mode network and
// a loaded TCG guest delay that close past the client's own idle timer, and the next request on it fails with
// no answer from the agent at all. The tier checks the agent, not connection reuse, so it never reuses one.
// A failure names its cause (ECONNREFUSED: nothing listens; ECONNRESET / socket hang up: closed mid-request).
import { request } from 'node:http';

export interface GuestResponse {
  status: number;
  text: string;
}

export function guestRequest(
  port: number,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs: number },
): Promise<GuestResponse> {
  const method = init.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, headers: init.headers, agent: false, timeout: init.timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', (err) => reject(requestError(method, path, err)));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${init.timeoutMs / 1000} s`)));
    req.on('error', (err) => reject(requestError(method, path, err)));
    req.end(init.body);
  });
}

function requestError(method: string, path: string, err: Error & { code?: string }): Error {
  return new Error(`${method} ${path}: ${err.code ? `${err.code}: ` : ''}${err.message}`);
}
