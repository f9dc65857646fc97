// The agent's router on a real HTTP server on loopback, for unit tests of route sets that real clients (the
// official openai and ollama packages, fetch) talk to: every request is let in, the server closes with the test.
import type { ExecutionContext } from 'ava';
import { HttpRouter } from '../../agent/http/router.js';
import { createHttpServer } from '../../agent/http/server.js';
import { createMemoryLogger, type Logger } from '../../lib/log.js';

export interface Loopback {
  router: HttpRouter;
  logger: Logger;
  /** Starts the server once the routes are registered; resolves to its base URL (http://127.0.0.1:<port>). */
  listen(): Promise<string>;
}

export function loopbackRouter(t: ExecutionContext): Loopback {
  const router = new HttpRouter();
  const logger = createMemoryLogger();
  return {
    router,
    logger,
    async listen() {
      const server = createHttpServer({
        bind: '127.0.0.1',
        port: 0,
        maxUploadBytes: 1 << 20,
        maxWsMessageBytes: 1 << 16,
        router,
        authenticator: { authenticate: () => ({ method: 'bearer' }), tokenMatches: () => true },
        logger,
      });
      await server.listen();
      t.teardown(() => server.close());
      return `http://127.0.0.1:${server.port}`;
    },
  };
}
