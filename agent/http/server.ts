import { readFileSync } from 'node:fs';
import {
  createServer as createHttp,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { MnnEdgeError } from '../../lib/errors.js';
import { errorBody, HttpError } from '../../lib/http-error.js';
import { createHttpsServer } from '../../lib/lazy-https.js';
import type { Logger } from '../../lib/log.js';
import { type Authenticator, type AuthInfo, refusalFor } from './auth.js';
import { parseJsonBody, readBody } from './body.js';
import type { HttpRouter, RequestContext } from './router.js';

// One server for everything on the device: dashboard, JSON API, OpenAI-compatible API and websockets share a
// port, an auth check and a body limit. Routing is delegated to HttpRouter, so modules never touch the server.

export interface HttpServerOptions {
  bind: string;
  port: number;
  tls?: { cert: string; key: string } | undefined;
  maxUploadBytes: number;
  maxWsMessageBytes: number;
  router: HttpRouter;
  authenticator: Authenticator;
  logger: Logger;
  /**
   * True while the agent's modules are still starting (the server listens before them): a path no route
   * serves yet answers 503 with Retry-After instead of 404, since its module may be about to register it.
   */
  starting?: () => boolean;
}

export interface AgentHttpServer {
  listen(): Promise<void>;
  close(): Promise<void>;
  /** The bound port (the OS's choice when configured as 0); 0 before listen(). */
  readonly port: number;
  readonly address: string;
  readonly secure: boolean;
}

/** How long an idle kept-alive connection stays open on the agent's side (see createHttpServer). */
export const KEEP_ALIVE_MS = 65_000;

const SECURITY_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function unauthorized(headers: IncomingMessage['headers']): HttpError {
  const refusal = refusalFor(headers);
  return new HttpError(401, refusal.code, refusal.message, { 'WWW-Authenticate': refusal.wwwAuthenticate });
}

/** Cookies ride along on cross-site websocket handshakes in some browsers; only same-origin pages may use them. */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string): void {
  const body = JSON.stringify(errorBody(reason, message));
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

function readTls(tls: { cert: string; key: string }): { cert: Buffer; key: Buffer } {
  const read = (what: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new MnnEdgeError('ECONFIG', `Cannot read http.tls.${what} ${path}: ${(err as Error).message}`);
    }
  };
  return { cert: read('cert', tls.cert), key: read('key', tls.key) };
}

const stillStarting = () =>
  new HttpError(503, 'starting', 'The agent is still starting; try again in a moment', {
    'Retry-After': '1',
  });

/** `ws` loads on the first upgrade: it is not needed to answer the first request after a start. */
function lazyWebSockets(maxPayload: number) {
  let wss: WebSocketServer | undefined;
  let loading: Promise<WebSocketServer> | undefined;
  return {
    get: () =>
      (loading ??= import('ws').then((m) => {
        wss = new m.WebSocketServer({ noServer: true, maxPayload });
        return wss;
      })),
    /** Ends every open socket; nothing to do when none was ever upgraded. */
    closeAll: () => {
      if (!wss) return;
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}

/** Routing, auth and the request context for one request; errors are thrown for the caller to answer. */
async function handleRequest(
  options: HttpServerOptions,
  secure: boolean,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { router, authenticator, logger } = options;
  const url = new URL(req.url ?? '/', 'http://device.invalid');
  const method = req.method ?? 'GET';
  const { found, allowed, pathAuth } = router.match(method, url.pathname);
  // While modules are still registering, an unknown path may be a public one (the dashboard's page): 503 before
  // 401, which tells an anonymous client nothing about the route map either.
  if (!found && allowed.length === 0 && options.starting?.()) throw stillStarting();
  const needsAuth = found ? found.entry.auth : pathAuth;
  const auth: AuthInfo | undefined = authenticator.authenticate(req.headers);
  // Unknown paths answer 401 before 404, so an anonymous client learns nothing about the route map.
  if (needsAuth && auth === undefined) throw unauthorized(req.headers);
  if (!found) {
    if (allowed.length > 0) {
      throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${url.pathname}`, {
        Allow: allowed.join(', '),
      });
    }
    throw new HttpError(404, 'not_found', `No endpoint at ${url.pathname}`);
  }
  const ctx: RequestContext = {
    req,
    res,
    url,
    params: found.params,
    auth,
    secure,
    logger,
    readBody: () => readBody(req, options.maxUploadBytes),
    readJson: async () =>
      parseJsonBody(await readBody(req, options.maxUploadBytes), req.headers['content-type']),
    json: (status, body, headers) => sendJson(res, status, body, headers),
  };
  await found.entry.handler(ctx);
}

/** Answers what a handler threw: its HttpError as JSON, anything else as a logged 500. */
function answerFailure(logger: Logger, req: IncomingMessage, res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    logger.error('handler failed after responding', { path: req.url, err });
    res.destroy();
    return;
  }
  if (err instanceof HttpError) {
    // The body limit leaves the rest of the upload unread: close rather than drain it.
    if (err.status === 413) res.setHeader('Connection', 'close');
    sendJson(res, err.status, errorBody(err.code, err.message), err.headers);
    return;
  }
  logger.error('request handler failed', { method: req.method, path: req.url, err });
  sendJson(res, 500, errorBody('internal_error', 'The agent failed to handle this request; see its log'));
}

/** WebSocket upgrades: the same auth and not-yet-registered rules as requests, plus a same-origin check. */
function upgradeHandler(options: HttpServerOptions, webSockets: () => Promise<WebSocketServer>) {
  const { router, authenticator, logger } = options;
  return (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://device.invalid');
    const match = router.matchUpgrade(url.pathname);
    const auth = authenticator.authenticate(req.headers);
    // As for requests: anonymous clients get 401 for unknown paths too.
    if (auth === undefined && (match === undefined || match.entry.auth)) {
      rejectUpgrade(socket, 401, 'Unauthorized', unauthorized(req.headers).message);
      return;
    }
    if (match === undefined) {
      if (options.starting?.()) rejectUpgrade(socket, 503, 'Service Unavailable', stillStarting().message);
      else rejectUpgrade(socket, 404, 'Not Found', `No WebSocket endpoint at ${url.pathname}`);
      return;
    }
    if (auth?.method === 'session' && !sameOrigin(req)) {
      rejectUpgrade(socket, 403, 'Forbidden', 'Cross-origin WebSocket with a session cookie refused');
      return;
    }
    webSockets().then(
      (server) =>
        server.handleUpgrade(req, socket, head, (ws) => {
          try {
            match.entry.handler(ws, { req, url, params: match.params, auth, logger });
          } catch (err) {
            logger.error('websocket handler failed', { path: url.pathname, err });
            ws.close(1011, 'internal error');
          }
        }),
      (err: unknown) => {
        logger.error('websocket support failed to load', { err });
        socket.destroy();
      },
    );
  };
}

export function createHttpServer(options: HttpServerOptions): AgentHttpServer {
  const { logger } = options;
  const secure = options.tls !== undefined;
  const webSockets = lazyWebSockets(options.maxWsMessageBytes);
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handleRequest(options, secure, req, res).catch((err: unknown) => answerFailure(logger, req, res, err));
  };
  const onUpgrade = upgradeHandler(options, webSockets.get);

  const server: Server = options.tls
    ? createHttpsServer(readTls(options.tls), onRequest)
    : createHttp(onRequest);
  // An idle kept-alive connection is closed by the client, never by us. When both ends time out near the same
  // moment, a request the client sends just as our close is on the wire gets no answer (no retry in undici's
  // fetch, httpx or aiohttp). Node's 5 s equals httpx's keep-alive expiry and sits 1 s above undici's; a slow link
  // (a board on weak Wi-Fi, QEMU's user network) widens that race to seconds. 65 s outlasts the common clients'
  // idle timers (httpx 5 s, aiohttp 15 s, browsers up to 60 s), as servers behind load balancers are set; an idle
  // socket costs a few KB. The header timeout must stay above it, or an idle connection meets it first.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  server.on('upgrade', onUpgrade);
  server.on('clientError', (err, socket) => {
    logger.debug('malformed request', { err });
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  let boundPort = 0;
  let boundAddress = options.bind;
  return {
    get port() {
      return boundPort;
    },
    get address() {
      return boundAddress;
    },
    secure,
    listen() {
      return new Promise((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException) => {
          reject(
            new MnnEdgeError(
              'ELISTEN',
              `Cannot listen on ${options.bind}:${options.port}: ${err.code === 'EADDRINUSE' ? 'address already in use (http.port)' : err.message}`,
            ),
          );
        };
        server.once('error', onError);
        server.listen(options.port, options.bind, () => {
          server.off('error', onError);
          const addr = server.address() as AddressInfo;
          boundPort = addr.port;
          boundAddress = addr.address;
          resolve();
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        webSockets.closeAll();
        if (!server.listening) return resolve();
        server.close(() => resolve());
        // Keep-alive sockets would hold close() open until they time out.
        server.closeAllConnections();
      });
    },
  };
}
