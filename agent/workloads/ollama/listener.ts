// The optional listener on Ollama's own port (11434), for clients that assume it. It serves the Ollama API and
// nothing else of the agent (no dashboard, no other /api routes): `GET /` answers "Ollama is running" as Ollama
// does, the Ollama paths are relayed to the agent's own port on loopback, where the same auth, body limits and
// handlers apply (the bearer token is still required), and a client outside `ollama.listener.allow` is refused
// before anything is read.
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { OllamaListenerConfig } from '../../config/sections/ollama.js';
import { allowList, clientAllowed } from '../wyoming/server.js';

/** The paths the listener relays: the Ollama API this agent serves (routes.ts). */
const RELAYED = new Set([
  '/api/version',
  '/api/tags',
  '/api/ps',
  '/api/show',
  '/api/chat',
  '/api/generate',
  '/api/pull',
]);

export interface AgentPort {
  port: number;
  /** The agent's bound address; a wildcard is reached over loopback. */
  address: string;
  secure: boolean;
}

export interface OllamaListener {
  readonly port: number;
  close(): Promise<void>;
}

function answer(res: ServerResponse, status: number, error: string): void {
  const body = JSON.stringify({ error });
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function loopbackFor(address: string): string {
  if (address === '0.0.0.0' || address === '') return '127.0.0.1';
  if (address === '::') return '::1';
  return address;
}

function relay(req: IncomingMessage, res: ServerResponse, agent: AgentPort, log: Logger): void {
  const send = agent.secure ? httpsRequest : httpRequest;
  const upstream = send(
    {
      host: loopbackFor(agent.address),
      port: agent.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      // The agent's own certificate, reached by address over loopback: its name cannot match.
      ...(agent.secure ? { rejectUnauthorized: false } : {}),
    },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on('error', (err) => {
    log.warn('Ollama listener: the agent did not answer', { error: errorMessage(err) });
    if (!res.headersSent) answer(res, 502, `The agent did not answer: ${errorMessage(err)}`);
    else res.destroy();
  });
  // A client that goes away cancels the answer on the agent too (its generation stops).
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/** Starts the listener; `agent()` is undefined until the agent's own port is known. */
export async function startOllamaListener(
  config: OllamaListenerConfig,
  agent: () => AgentPort | undefined,
  log: Logger,
): Promise<OllamaListener> {
  const allow = allowList(config.allow, 'ollama.listener.allow');
  const server: Server = createServer((req, res) => {
    const remote = req.socket.remoteAddress;
    if (!clientAllowed(allow, remote)) {
      log.info('Ollama client refused: not in ollama.listener.allow', { remote });
      return answer(res, 403, `Client ${remote ?? 'unknown'} is not in ollama.listener.allow`);
    }
    const path = new URL(req.url ?? '/', 'http://device.invalid').pathname;
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 17 });
      return res.end(req.method === 'HEAD' ? undefined : 'Ollama is running');
    }
    if (!RELAYED.has(path)) return answer(res, 404, `No Ollama endpoint at ${path}`);
    const target = agent();
    if (!target) return answer(res, 503, 'The agent is still starting; try again in a moment');
    relay(req, res, target, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
