import { hostname } from 'node:os';
import type { AgentModule } from '../module.js';
import {
  createMdnsResponder,
  type MdnsResponder,
  type MdnsResponderOptions,
  type MdnsServiceInfo,
} from './responder.js';

// Announces the dashboard on the LAN when `http.mdns` is on (the image's config), so a person at the bench
// opens http://<host>.local:<port>/ or finds "mnn-edge … (board)" in a service browser; and the other services
// the agent listens on (the Wyoming voice server as `_wyoming._tcp`, found by Home Assistant), each only when
// its own section enables it and it listens. Off by default and in tests: nothing is sent unless the config
// asks for it.

/** Another service of this device on its own port, announced under the device's name. */
export interface ExtraService {
  type: string;
  port: number;
  txt?: Record<string, string>;
}

export interface MdnsModuleOptions {
  /** The board's name as detection found it, e.g. "Radxa ROCK 5B"; read when the agent has started. */
  board: () => string | undefined;
  soc?: () => string | undefined;
  version: string;
  /** Override the socket (tests). */
  socket?: MdnsResponderOptions['socket'];
  addresses?: () => string[];
  host?: string;
  /** Read when the agent has started: services besides the dashboard that listen now (e.g. Wyoming). */
  extraServices?: () => readonly ExtraService[];
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
      // The real port is known only once the server listens (port 0 in development), so announce then.
      off = ctx.events.on('started', ({ port }) => {
        const extras = options.extraServices?.() ?? [];
        if (!ctx.config.http.mdns && extras.length === 0) return;
        const board = options.board();
        const shortId = ctx.identity.deviceId.slice(0, 8);
        const instance = `mnn-edge ${shortId}${board ? ` (${board})` : ''}`;
        const host = options.host ?? hostname().split('.')[0]!;
        const services: MdnsServiceInfo[] = extras.map((e) => ({
          type: e.type,
          instance,
          host,
          port: e.port,
          txt: e.txt ?? {},
        }));
        if (ctx.config.http.mdns) {
          services.unshift({
            instance,
            host,
            port,
            txt: {
              path: '/',
              id: ctx.identity.deviceId,
              ...(board ? { board } : {}),
              ...(options.soc?.() ? { soc: options.soc()! } : {}),
              version: options.version,
              tls: ctx.config.http.tls ? '1' : '0',
            },
          });
        }
        responder = createMdnsResponder({
          services,
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
