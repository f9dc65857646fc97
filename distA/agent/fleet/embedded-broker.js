import { createServer } from 'node:net';
import { Aedes } from 'aedes';
import { errorMessage, MnnEdgeError } from '../common/errors.js';
export async function startEmbeddedBroker(options) {
    const broker = await Aedes.createBroker();
    const server = createServer(broker.handle);
    broker.on('clientError', (client, err) => options.logger.debug('embedded broker client error', { client: client.id, error: err.message }));
    try {
        await new Promise((resolve, reject) => {
            server.once('error', reject);
            server.listen(options.port, options.host, () => {
                server.off('error', reject);
                resolve();
            });
        });
    }
    catch (err) {
        broker.close();
        throw new MnnEdgeError('EBROKER', `Cannot start the embedded MQTT broker on ${options.host}:${options.port}: ${errorMessage(err)} (set mqtt.embeddedBroker.port, or mqtt.url to use an external broker)`, { port: options.port, errno: err.code });
    }
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    options.logger.info('embedded MQTT broker listening', { host: options.host, port });
    let closing;
    return {
        url: `mqtt://${host}:${port}`,
        port,
        close() {
            closing ??= new Promise((resolve) => {
                server.close(() => resolve());
                // Open client sockets would keep server.close() waiting; aedes closes them.
                broker.close();
            });
            return closing;
        },
    };
}
//# sourceMappingURL=embedded-broker.js.map