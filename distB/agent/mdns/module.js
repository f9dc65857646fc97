import { hostname } from 'node:os';
import { createMdnsResponder } from './responder.js';
export function createMdnsModule(options) {
    let responder;
    let off;
    return {
        name: 'mdns',
        responder: () => responder,
        start(ctx) {
            if (!ctx.config.http.mdns)
                return;
            // The real port is known only once the server listens (port 0 in development), so announce then.
            off = ctx.events.on('started', ({ port }) => {
                const board = options.board();
                const shortId = ctx.identity.deviceId.slice(0, 8);
                responder = createMdnsResponder({
                    service: {
                        instance: `mnn-edge ${shortId}${board ? ` (${board})` : ''}`,
                        host: options.host ?? hostname().split('.')[0],
                        port,
                        txt: {
                            path: '/',
                            id: ctx.identity.deviceId,
                            ...(board ? { board } : {}),
                            ...(options.soc?.() ? { soc: options.soc() } : {}),
                            version: options.version,
                            tls: ctx.config.http.tls ? '1' : '0',
                        },
                    },
                    ...(options.socket ? { socket: options.socket } : {}),
                    ...(options.addresses ? { addresses: options.addresses } : {}),
                    logger: ctx.logger,
                });
                responder.start().catch((err) => {
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
//# sourceMappingURL=module.js.map