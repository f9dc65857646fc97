import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Aedes } from 'aedes';
import test from 'ava';
import { createWebSocketStream, WebSocketServer } from 'ws';
import type { MqttConfig } from '../../agent/config/sections/mqtt.js';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// Transports beyond plain mqtt://: WebSockets (aedes behind a ws server) and mqtts:// with mutual TLS
// (mosquitto requiring a client certificate whose CN becomes the username).

function agentFor(mqtt: MqttConfig, deviceId: string): FleetAgent {
  return createFleetAgent({
    config: { mqtt, telemetry: { enabled: false }, root: '/nonexistent', dataDir: '/tmp' },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId,
    tags: [],
    board: () => undefined,
    clock: systemClock,
    agentVersion: 'test',
  });
}

async function connected(agent: FleetAgent): Promise<void> {
  if (!agent.connected) await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
}

test('ws:// carries the contract', async (t) => {
  const broker = await Aedes.createBroker();
  const http = createServer();
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', (socket, req) => broker.handle(createWebSocketStream(socket), req));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address();
  const url = `ws://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const agent = agentFor(
    { url, protocolVersion: 4, embeddedBroker: { enabled: false, port: 0, host: '' } },
    'ws-dev',
  );
  try {
    await agent.start();
    await connected(agent);
    const op = await FleetOperator.connect({ url, protocolVersion: 4 });
    const [pong] = await op.command({ deviceId: 'ws-dev' }, 'ping');
    t.true(pong?.ok);
    await op.close();
  } finally {
    await agent.stop();
    for (const c of wss.clients) c.terminate();
    wss.close();
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }
});

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function issue(dir: string, name: string, cn: string, ext?: string): void {
  openssl(
    dir,
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${cn}`,
  );
  const extArgs: string[] = [];
  if (ext) {
    writeFileSync(join(dir, `${name}.ext`), ext);
    extArgs.push('-extfile', `${name}.ext`);
  }
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '1',
    ...extArgs,
  );
}

test('mqtts:// with a client certificate (mTLS); the broker refuses a client without one', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-tls-'));
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-subj',
    '/CN=mnn-edge test CA',
    '-days',
    '1',
  );
  issue(dir, 'server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\n');
  issue(dir, 'device', 'tls-dev');
  issue(dir, 'operator', 'operator');
  const broker = await startMosquitto({
    extraConfig: [
      `cafile ${join(dir, 'ca.crt')}`,
      `certfile ${join(dir, 'server.crt')}`,
      `keyfile ${join(dir, 'server.key')}`,
      'require_certificate true',
      'use_identity_as_username true',
    ],
  });
  const url = `mqtts://127.0.0.1:${broker.port}`;
  const agent = agentFor(
    {
      url,
      protocolVersion: 5,
      ca: join(dir, 'ca.crt'),
      cert: join(dir, 'device.crt'),
      key: join(dir, 'device.key'),
      embeddedBroker: { enabled: false, port: 0, host: '' },
    },
    'tls-dev',
  );
  try {
    await agent.start();
    await connected(agent);
    const ca = readFileSync(join(dir, 'ca.crt'));
    const op = await FleetOperator.connect({
      url,
      ca,
      cert: readFileSync(join(dir, 'operator.crt')),
      key: readFileSync(join(dir, 'operator.key')),
    });
    const [pong] = await op.command({ deviceId: 'tls-dev' }, 'ping');
    t.true(pong?.ok);
    await op.close();
    await t.throwsAsync(FleetOperator.connect({ url, ca, connectTimeoutMs: 2000 }), {
      message: new RegExp(`^Cannot connect to ${url.replace(/[.]/g, '\\.')}: `),
    });
  } finally {
    await agent.stop();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
