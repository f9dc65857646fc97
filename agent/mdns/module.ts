import { hostname } from 'node:os';
import type { AgentModule } from '../module.js';
import { createMdnsResponder, type MdnsResponder, type MdnsResponderOptions } from './responder.js';

// Announces the dashboard on the LAN when `http.mdns` is on (the image's config), so a person at the bench
// opens http://<host>.local:<port>/ or finds "mnn-edge … (board)" in a service browser. Off by default and in
// tests: nothing is sent unless the config asks for it.

export interface MdnsModuleOptions {
  /** The board's name as detection found it, e.g. "Radxa ROCK 5B"; read when the agent has started. */
  board: () => string | undefined;
  soc?: () => string | undefined;
  version: string;
  /** Override the socket (tests). */
  socket?: MdnsResponderOptions['socket'];
  addresses?: () => string[];
  host?: string;
}

export function createMdnsModule(
  options: MdnsModuleOptions,
): AgentModule & { responder(): MdnsResponder | undefined } {
  let responder: MdnsResponder | undefined;
  let off: (() => void) | undefined;
  return {
    name: 'mdns',
    responder: () => responder,
    start(ctx) {
      if (!ctx.config.http.mdns) return;
      // The real port is known only once the server listens (port 0 in development), so announce then.
      off = ctx.events.on('started', ({ port }) => {
        const board = options.board();
        const shortId = ctx.identity.deviceId.slice(0, 8);
        responder = createMdnsResponder({
          service: {
            instance: `mnn-edge ${shortId}${board ? ` (${board})` : ''}`,
            host: options.host ?? hostname().split('.')[0]!,
            port,
            txt: {
              path: '/',
              id: ctx.identity.deviceId,
              ...(board ? { board } : {}),
              ...(options.soc?.() ? { soc: options.soc()! } : {}),
              version: options.version,
              tls: ctx.config.http.tls ? '1' : '0',
            },
          },
          ...(options.socket ? { socket: options.socket } : {}),
          ...(options.addresses ? { addresses: options.addresses } : {}),
          logger: ctx.logger,
        });
        responder.start().catch((err: unknown) => {
          ctx.logger.warn('mDNS announcement disabled: cannot open the mDNS socket', { err });
        });
      });
    },
    async stop() {
      off?.();
      await responder?.stop();
      responder = undefined;
    },
  };
}
