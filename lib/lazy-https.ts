// node:https (and the node:tls under it) is the largest of Node's built-ins, and most boards never use it: the
// broker is on localhost, the dashboard is plain HTTP on the LAN, and OTA or hub downloads are rare. Loaded on
// first use, synchronously, it stays out of the idle daemon (bench/idle) and off the path to READY (bench/startup).
import { createRequire } from 'node:module';

type Https = typeof import('node:https');

let https: Https | undefined;
const load = (): Https => {
  https ??= createRequire(import.meta.url)('node:https') as Https;
  return https;
};

export const httpsRequest: Https['request'] = ((...args: Parameters<Https['request']>) =>
  load().request(...args)) as Https['request'];

export const createHttpsServer: Https['createServer'] = ((...args: Parameters<Https['createServer']>) =>
  load().createServer(...args)) as Https['createServer'];
