import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import type { MqttConfig } from '../../agent/config/sections/mqtt.js';
import { resolveTelemetryConfig } from '../../agent/config/sections/telemetry.js';
import { linkConfig } from '../../agent/fleet/agent-connection.js';
import { registerBuiltinCommands } from '../../agent/fleet/builtin-commands.js';
import { backoffDelay, buildClientOptions } from '../../agent/fleet/client-options.js';
import { CommandError, CommandRegistry } from '../../agent/fleet/commands.js';
import { formatAge, formatResponses, table } from '../../agent/operator/fleet/format.js';
import type { Clock } from '../../lib/clock.js';
import { createLogger, createMemoryLogger } from '../../lib/log.js';
import { LogTail } from '../../lib/log-tail.js';

const clock: Clock = { monotonicMs: () => 10_000, nowMs: () => 1_700_000_000_000 };
const ctx = { deviceId: 'd1', logger: createMemoryLogger() };

test('command names and duplicates are rejected at registration', (t) => {
  const r = new CommandRegistry();
  r.register({ name: 'ok-1', summary: '', handler: () => 1 });
  t.throws(() => r.register({ name: 'ok-1', summary: '', handler: () => 1 }), {
    message: 'Command "ok-1" is already registered',
  });
  t.throws(() => r.register({ name: 'Bad_Name', summary: '', handler: () => 1 }), {
    message: `Invalid command name "Bad_Name": expected lowercase letters, digits and '-' (max 48)`,
  });
  t.deepEqual(r.list(), [{ name: 'ok-1', summary: '' }]);
});

test('handlers that run too long time out; CommandError codes pass through', async (t) => {
  const r = new CommandRegistry();
  r.register({ name: 'slow', summary: '', timeoutMs: 20, handler: () => new Promise(() => undefined) });
  r.register({
    name: 'picky',
    summary: '',
    handler: () => {
      throw new CommandError('EPARAMS', 'slot "x" does not exist');
    },
  });
  t.deepEqual(await r.dispatch('slow', {}, ctx), {
    ok: false,
    error: { code: 'ETIMEOUT', message: 'slow did not finish within 20 ms' },
  });
  t.deepEqual(await r.dispatch('picky', {}, ctx), {
    ok: false,
    error: { code: 'EPARAMS', message: 'slot "x" does not exist' },
  });
});

test('a stopping agent cancels running commands and the handler sees the signal', async (t) => {
  const r = new CommandRegistry();
  let seen: AbortSignal | undefined;
  r.register({
    name: 'wait',
    summary: '',
    handler: (_p, c) => {
      seen = c.signal;
      return new Promise(() => undefined);
    },
  });
  const stop = new AbortController();
  const pending = r.dispatch('wait', undefined, { ...ctx, signal: stop.signal });
  stop.abort();
  t.deepEqual(await pending, {
    ok: false,
    error: { code: 'EHANDLER', message: 'wait was cancelled: the agent is stopping' },
  });
  t.true(seen?.aborted);
});

test('built-in ping, logs and get-state', async (t) => {
  const r = new CommandRegistry();
  const ring = new LogTail({ maxLines: 3 });
  const log = createLogger({ level: 'debug', write: ring.write });
  registerBuiltinCommands(r, { clock, agentVersion: '9.9.9', logs: ring, state: () => ({ hello: 'world' }) });
  t.deepEqual(await r.dispatch('ping', { echo: 'x' }, ctx), {
    ok: true,
    result: { pong: true, ts: 1_700_000_000_000, uptimeSec: 0, agentVersion: '9.9.9', echo: 'x' },
  });
  log.info('one');
  log.child('runtime').warn('two');
  log.debug('three');
  log.error('four');
  const all = await r.dispatch('logs', {}, ctx);
  t.true(all.ok);
  const lines = (all as { result: { lines: { msg: string }[] } }).result.lines.map((l) => l.msg);
  t.deepEqual(lines, ['two', 'three', 'four'], 'the ring is bounded');
  const warn = (await r.dispatch('logs', { level: 'warn', lines: 5 }, ctx)) as {
    result: { lines: { msg: string }[] };
  };
  t.deepEqual(
    warn.result.lines.map((l) => l.msg),
    ['two', 'four'],
  );
  const ns = (await r.dispatch('logs', { ns: 'mnn-edge:runtime' }, ctx)) as {
    result: { lines: { msg: string }[] };
  };
  t.deepEqual(
    ns.result.lines.map((l) => l.msg),
    ['two'],
  );
  t.deepEqual(await r.dispatch('logs', { lines: 501 }, ctx), {
    ok: false,
    error: { code: 'EPARAMS', message: 'Invalid params for logs: lines: expected a number <= 500, got 501' },
  });
  t.deepEqual(await r.dispatch('get-state', undefined, ctx), { ok: true, result: { hello: 'world' } });
  t.deepEqual(await r.dispatch('get-state', { x: 1 }, ctx), {
    ok: false,
    error: {
      code: 'EPARAMS',
      message: 'Invalid params for get-state: x: is not a known key',
    },
  });
});

test('reconnect backoff is full-jitter exponential and capped', (t) => {
  const range = { minMs: 100, maxMs: 1000 };
  t.is(
    backoffDelay(0, range, () => 0.5),
    100,
  );
  t.is(
    backoffDelay(1, range, () => 1),
    200,
  );
  t.is(
    backoffDelay(3, range, () => 1),
    800,
  );
  t.is(
    backoffDelay(10, range, () => 1),
    1000,
  );
  t.is(
    backoffDelay(10, range, () => 0),
    100,
  );
  t.is(
    backoffDelay(2, range, () => 0.5),
    250,
  );
});

const mqtt = (extra: Partial<MqttConfig> = {}): MqttConfig => ({
  protocolVersion: 5,
  embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
  ...extra,
});
const will = { topic: 'mnn-edge/d1/status', payload: '{"v":1,"state":"offline","deviceId":"d1"}' };

test('the link to the embedded broker (in this process) sends no keep-alive pings; an external one keeps them', (t) => {
  // Keep-alive timers on an in-process link only wake the idle agent (issue 31, bench/idle).
  const target = { url: 'mqtt://127.0.0.1:1883', protocolVersion: 4 } as const;
  const embedded = buildClientOptions(
    linkConfig(mqtt({ keepaliveSec: 15 }), true),
    target,
    'mnn-edge-d1',
    will,
  );
  t.is(embedded.keepalive, 0);
  const external = buildClientOptions(
    linkConfig(mqtt({ keepaliveSec: 15 }), false),
    target,
    'mnn-edge-d1',
    will,
  );
  t.is(external.keepalive, 15);
  t.is(buildClientOptions(linkConfig(mqtt(), false), target, 'mnn-edge-d1', will).keepalive, 30);
});

test('client options: credentials, retained QoS 1 will, no built-in reconnect', (t) => {
  const o = buildClientOptions(
    mqtt({ username: 'd1', password: 'pw', keepaliveSec: 15 }),
    { url: 'mqtt://h', protocolVersion: 5 },
    'mnn-edge-d1',
    will,
  );
  t.like(o, {
    clientId: 'mnn-edge-d1',
    username: 'd1',
    password: 'pw',
    protocolVersion: 5,
    keepalive: 15,
    reconnectPeriod: 0,
    // The broker keeps the session an hour by default, so commands sent while the device is away wait for it.
    clean: false,
    properties: { sessionExpiryInterval: 3600 },
    resubscribe: false,
  });
  t.like(o.will, { topic: will.topic, qos: 1, retain: true });
  t.is(o.will?.payload.toString(), will.payload);
});

test('client options: sessionExpirySec 0 asks for clean sessions; MQTT 3.1.1 has no expiry property', (t) => {
  const target = { url: 'mqtt://h', protocolVersion: 5 as const };
  const clean = buildClientOptions(mqtt({ sessionExpirySec: 0 }), target, 'c', will);
  t.is(clean.clean, true);
  t.is(clean.properties, undefined);
  const v4 = buildClientOptions(
    mqtt({ sessionExpirySec: 600 }),
    { ...target, protocolVersion: 4 },
    'c',
    will,
  );
  t.is(v4.clean, false);
  t.is(v4.properties, undefined);
});

test('client options: mTLS reads CA, certificate and key; misconfiguration is explained', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-tls-'));
  try {
    for (const f of ['ca.pem', 'crt.pem', 'key.pem']) writeFileSync(join(dir, f), `-----${f}-----`);
    const tls = { ca: join(dir, 'ca.pem'), cert: join(dir, 'crt.pem'), key: join(dir, 'key.pem') };
    const o = buildClientOptions(mqtt(tls), { url: 'mqtts://broker:8883', protocolVersion: 5 }, 'c', will);
    t.is(o.ca?.toString(), '-----ca.pem-----');
    t.is(o.cert?.toString(), '-----crt.pem-----');
    t.is(String(o.key), '-----key.pem-----');
    t.true(o.rejectUnauthorized);
    t.throws(
      () => buildClientOptions(mqtt({ cert: tls.cert }), { url: 'mqtts://b', protocolVersion: 5 }, 'c', will),
      {
        message: 'mqtt.cert and mqtt.key must be given together for a client certificate',
      },
    );
    t.throws(() => buildClientOptions(mqtt(tls), { url: 'mqtt://b', protocolVersion: 5 }, 'c', will), {
      message: 'mqtt.ca/cert/key need an mqtts:// or wss:// url, got mqtt://b',
    });
    t.throws(
      () =>
        buildClientOptions(
          mqtt({ ca: join(dir, 'missing.pem') }),
          { url: 'wss://b/mqtt', protocolVersion: 5 },
          'c',
          will,
        ),
      { message: new RegExp(`^Cannot read mqtt.ca ${join(dir, 'missing.pem')}: ENOENT`) },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('telemetry config: defaults fill in, and the config schema names bad keys', (t) => {
  const c = resolveTelemetryConfig({ publishIntervalMs: 1000, outbox: { flushIntervalMs: 0 } });
  t.is(c.publishIntervalMs, 1000);
  t.is(c.outbox.flushIntervalMs, 0);
  t.is(c.outbox.maxInflight, 32);
  t.is(c.history.bucketSec, 60);
  t.throws(() => parseConfig({ telemetry: { outbox: { flushIntervalMs: -1 } } }, 'test.json'), {
    message:
      'Invalid configuration in test.json: telemetry.outbox.flushIntervalMs: expected a number >= 0, got -1',
  });
  t.throws(() => parseConfig({ telemetry: { sampleEvery: 5 } }, 'test.json'), {
    message: /^Invalid configuration in test.json: telemetry.sampleEvery: is not a known key/,
  });
  t.throws(() => parseConfig({ mqtt: { reconnect: { minMs: 5, maxMs: 100 } } }, 'test.json'), {
    message: 'Invalid configuration in test.json: mqtt.reconnect.minMs: expected a number >= 10, got 5',
  });
});

test('CLI formatting: ages and tables', (t) => {
  t.is(formatAge(undefined), '-');
  t.is(formatAge(-5), '0s');
  t.is(formatAge(42_000), '42s');
  t.is(formatAge(125_000), '2m05s');
  t.is(formatAge(3_660_000), '1h01m');
  t.is(formatAge(3 * 86_400_000), '3d');
  t.is(
    table(
      ['A', 'LONGER'],
      [
        ['x', 'y'],
        ['wide-cell', 'z'],
      ],
    ),
    'A          LONGER\nx          y\nwide-cell  z\n',
  );
  t.is(
    formatResponses([
      { v: 1, deviceId: 'd1', command: 'ping', ok: true, ts: 1, result: { pong: true } },
      {
        v: 1,
        deviceId: 'd2',
        command: 'ping',
        ok: false,
        ts: 1,
        error: { code: 'ETIMEOUT', message: 'slow' },
      },
    ]),
    'd1: ok {"pong":true}\nd2: error ETIMEOUT: slow\n',
  );
});
