// A small static server for package files: what `ota publish --serve` runs beside the broker, and what the
// tests use. Supports single Range requests (bytes=N- and bytes=N-M) so devices can resume. Only plain file
// names inside one directory are served.

import { createReadStream, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface PackageServer {
  server: Server;
  baseUrl: string;
  close(): Promise<void>;
}

export function handlePackageRequest(dir: string, req: IncomingMessage, res: ServerResponse): void {
  const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
  if ((req.method !== 'GET' && req.method !== 'HEAD') || !SAFE_NAME.test(name)) {
    res.writeHead(404).end();
    return;
  }
  const path = join(dir, name);
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a file');
    size = st.size;
  } catch {
    res.writeHead(404).end();
    return;
  }
  let start = 0;
  let end = size - 1;
  const range = req.headers.range;
  if (range !== undefined) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range);
    if (!m || Number(m[1]) >= size || (m[2] !== '' && Number(m[2]) < Number(m[1]))) {
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(size - 1, Number(m[2]));
  }
  const headers = {
    'content-type': 'application/octet-stream',
    'content-length': String(end - start + 1),
    'accept-ranges': 'bytes',
    ...(range !== undefined ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
  };
  res.writeHead(range !== undefined ? 206 : 200, headers);
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return;
  }
  createReadStream(path, { start, end, highWaterMark: 1 << 20 }).pipe(res);
}

export async function servePackages(dir: string, host = '127.0.0.1', port = 0): Promise<PackageServer> {
  const server = createServer((req, res) => handlePackageRequest(dir, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A rollout phase starts hundreds of downloads at once; Node's default accept backlog (511) overflowed when
    // 900 boards connected together (docs/FLEET.md, NATS N = 1,000), and each dropped SYN waits out TCP's
    // retransmission backoff. The kernel still caps it at net.core.somaxconn (4096 on current kernels).
    server.listen({ port, host, backlog: 4096 }, resolve);
  });
  const addr = server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    baseUrl: `http://${shownHost}:${addr.port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
