import test from 'ava';
import { connect, type MqttClient } from 'mqtt';
import { createFleetAgent } from '../../agent/fleet/agent.js';
import type { CommandResponse } from '../../agent/fleet/protocol.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceTopics, fleetTopics } from '../../lib/topics.js';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.js';

// The malformed set that used to go unanswered or slip through, sent through a real mosquitto: payloads nested
// thousands of levels deep (under the 64 KiB limit), keys named like Object.prototype members, invalid UTF-8
// inside JSON strings. Each request gets exactly one response, and it names the problem.

const DEVICE = 'mal-dev:1';
const t0 = deviceTopics(DEVICE);

const nested = (depth: number, open: string, close: string, inner = '1') =>
  open.repeat(depth) + inner + close.repeat(depth);
const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

interface Case {
  name: string;
  topic?: string;
  payload: Buffer;
  code: string;
}

const cases: Case[] = [
  {
    name: 'arrays 5,000 deep',
    payload: Buffer.from(`{"params":{"x":${nested(5_000, '[', ']')}}}`),
    code: 'ETOODEEP',
  },
  { name: 'arrays 30,000 deep (60 KB)', payload: Buffer.from(nested(30_000, '[', ']')), code: 'ETOODEEP' },
  {
    name: 'objects 10,000 deep',
    payload: Buffer.from(`{"params":${nested(10_000, '{"a":', '}')}}`),
    code: 'ETOODEEP',
  },
  { name: 'key constructor', payload: Buffer.from('{"constructor":1}'), code: 'ESCHEMA' },
  { name: 'key toString', payload: Buffer.from('{"toString":"x"}'), code: 'ESCHEMA' },
  { name: 'key __proto__', payload: Buffer.from('{"__proto__":{"id":"x"}}'), code: 'ESCHEMA' },
  { name: 'key hasOwnProperty', payload: Buffer.from('{"hasOwnProperty":true}'), code: 'ESCHEMA' },
  { name: 'params key __proto__', payload: Buffer.from('{"params":{"__proto__":{}}}'), code: 'EPARAMS' },
  { name: 'params key constructor', payload: Buffer.from('{"params":{"constructor":"x"}}'), code: 'EPARAMS' },
  {
    name: 'fleet selector key constructor',
    topic: fleetTopics.command('ping'),
    payload: Buffer.from('{"selector":{"constructor":["x"]}}'),
    code: 'ESCHEMA',
  },
  {
    name: 'invalid UTF-8 in a string',
    payload: bytes('{"params":{"echo":"', [0xc3, 0x28], '"}}'),
    code: 'EPAYLOAD',
  },
  { name: 'overlong "/"', payload: bytes('{"params":{"echo":"', [0xc0, 0xaf], '"}}'), code: 'EPAYLOAD' },
  { name: 'UTF-8 encoded surrogate', payload: bytes('{"id":"', [0xed, 0xa0, 0x80], '"}'), code: 'EPAYLOAD' },
  { name: 'truncated sequence at the end', payload: bytes('{"id":"x"}', [0xe2, 0x82]), code: 'EPAYLOAD' },
  { name: 'invalid UTF-8 in a key', payload: bytes('{"', [0xff], '":1}'), code: 'EPAYLOAD' },
];

test('the malformed set: each request gets exactly one error response naming the problem', async (t) => {
  if (!mosquittoAvailable()) return t.fail('mosquitto is not installed (scripts/install-test-deps.sh)');
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const agent = createFleetAgent({
    config: {
      mqtt: {
        url: broker.url,
        protocolVersion: 'auto',
        embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
      },
      telemetry: { enabled: false },
      root: '/nonexistent',
      dataDir: '/tmp',
    },
    db: openStore(':memory:'),
    logger: createMemoryLogger(),
    deviceId: DEVICE,
    tags: [],
    board: () => ({ family: 'test' }),
    clock: systemClock,
    agentVersion: 'test',
  });
  t.teardown(() => agent.stop());
  await agent.start();
  if (!agent.connected) await new Promise<void>((resolve) => agent.events.once('connected', () => resolve()));
  t.is(agent.linkStatus()?.state, 'connected');

  const requester = await new Promise<MqttClient>((resolve, reject) => {
    const c = connect(broker.url, {
      protocolVersion: 5,
      clientId: 'malformed-requester',
      reconnectPeriod: 0,
    });
    c.once('connect', () => resolve(c));
    c.once('error', reject);
  });
  t.teardown(() => requester.endAsync(true));
  const replies = `${t0.responses}/malformed`;
  const got = new Map<string, CommandResponse[]>();
  requester.on('message', (_topic, payload, packet) => {
    const key = packet.properties?.correlationData?.toString() ?? '?';
    const list = got.get(key) ?? [];
    list.push(JSON.parse(payload.toString()) as CommandResponse);
    got.set(key, list);
  });
  await requester.subscribeAsync(`${t0.responses}/#`, { qos: 1 });
  for (const [i, c] of cases.entries()) {
    t.true(c.payload.length < 64 * 1024, `${c.name} is under the size limit`);
    await requester.publishAsync(c.topic ?? t0.command('ping'), c.payload, {
      qos: 1,
      properties: { responseTopic: replies, correlationData: Buffer.from(`case-${i}`) },
    });
  }
  // The sentinel goes last: once it is answered, every earlier request had its chance.
  await requester.publishAsync(t0.command('ping'), '{}', {
    qos: 1,
    properties: { responseTopic: replies, correlationData: Buffer.from('sentinel') },
  });
  const deadline = Date.now() + 10_000;
  while (!got.has('sentinel') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 500)); // room for a late second answer
  for (const [i, c] of cases.entries()) {
    const answers = got.get(`case-${i}`) ?? [];
    t.is(answers.length, 1, `${c.name}: exactly one response`);
    t.is(answers[0]?.ok, false, c.name);
    t.is(String(answers[0]?.error?.code), c.code, `${c.name}: ${answers[0]?.error?.message}`);
  }
  t.is(got.get('sentinel')?.[0]?.ok, true, 'the agent is alive and answering');
  t.log(
    cases.map((c, i) => `${c.name}: ${got.get(`case-${i}`)?.[0]?.error?.message.slice(0, 90)}`).join('\n'),
  );
});
