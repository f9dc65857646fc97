import { createServer, type Server } from 'node:net';
import { Aedes } from 'aedes';
import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';

// With no broker configured, the agent brings its own (aedes, MQTT 3.1.1) on localhost, so that the agent and
// the fleet CLI work on one machine out of the box. Real deployments point mqtt.url at mosquitto or EMQX.

export interface EmbeddedBroker {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function startEmbeddedBroker(options: {
  host: string;
  port: number;
  logger: Logger;
}): Promise<EmbeddedBroker> {
  // aedes publishes a $SYS heartbeat so that the other instances of a clustered broker know this one lives; the
  // embedded broker is alone, so an hourly one (it cannot be turned off) spares the idle agent a wake-up a
  // minute (issue 31, bench/idle).
  const broker = await Aedes.createBroker({ heartbeatInterval: 3_600_000 });
  const server: Server = createServer(broker.handle);
  broker.on('clientError', (client, err) =>
    options.logger.debug('embedded broker client error', { client: client.id, error: err.message }),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    broker.close();
    throw new MnnEdgeError(
      'EBROKER',
      `Cannot start the embedded MQTT broker on ${options.host}:${options.port}: ${errorMessage(err)} (set mqtt.embeddedBroker.port, or mqtt.url to use an external broker)`,
      { port: options.port, errno: (err as NodeJS.ErrnoException).code },
    );
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  options.logger.info('embedded MQTT broker listening', { host: options.host, port });
  let closing: Promise<void> | undefined;
  return {
    url: `mqtt://${host}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open client sockets would keep server.close() waiting; aedes closes them.
        broker.close();
      });
      return closing;
    },
  };
}
