import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { CommandServer, selectorMatches } from '../../agent/fleet/command-server.js';
import { CommandRegistry } from '../../agent/fleet/commands.js';
import {
  type CommandResponse,
  commandResponseSchema,
  decode,
  encode,
  exportProtocolSchemas,
  ProtocolViolation,
} from '../../agent/fleet/protocol.js';
import type { Clock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { validate } from '../../lib/schema.js';
import {
  deviceIdOf,
  deviceTopics,
  fleetTopics,
  isValidDeviceId,
  parseCommandTopic,
  resolveResponseTopic,
} from '../../lib/topics.js';
import { repoRoot } from '../helpers/paths.js';

const clock: Clock = { monotonicMs: () => 5_000, nowMs: () => 1_800_000_000_000 };

test('topics follow the contract', (t) => {
  const d = deviceTopics('board-7');
  t.is(d.status, 'mnn-edge/board-7/status');
  t.is(d.telemetry, 'mnn-edge/board-7/telemetry');
  t.is(d.document('placement'), 'mnn-edge/board-7/placement');
  t.is(d.commandFilter, 'mnn-edge/board-7/cmd/+');
  t.is(d.ota('jobs'), 'mnn-edge/board-7/ota/jobs');
  t.is(fleetTopics.command('ping'), 'mnn-edge/fleet/cmd/ping');
  t.deepEqual(parseCommandTopic('board-7', 'mnn-edge/board-7/cmd/ping'), { scope: 'device', name: 'ping' });
  t.deepEqual(parseCommandTopic('board-7', 'mnn-edge/fleet/cmd/bench'), { scope: 'fleet', name: 'bench' });
  t.is(parseCommandTopic('board-7', 'mnn-edge/other/cmd/ping'), undefined);
  t.is(parseCommandTopic('board-7', 'mnn-edge/board-7/cmd/ping/extra'), undefined);
  t.is(deviceIdOf('mnn-edge/board-7/status'), 'board-7');
  t.is(deviceIdOf('mnn-edge/fleet/cmd/x'), undefined);
});

test('device ids are checked, and "fleet" is reserved', (t) => {
  t.true(isValidDeviceId('rk3588-01:a.b_c'));
  t.false(isValidDeviceId('fleet'));
  t.false(isValidDeviceId('a/b'));
  t.false(isValidDeviceId('+'));
  t.throws(() => deviceTopics('a#b'), {
    message: 'Invalid device id "a#b": expected 1-64 of A-Z a-z 0-9 _ . : - (not "fleet")',
  });
});

test('response topics must stay under the device root; fleet patterns get the device id', (t) => {
  t.is(resolveResponseTopic('d1', 'mnn-edge/d1/responses'), 'mnn-edge/d1/responses');
  t.is(resolveResponseTopic('d1', 'mnn-edge/d1/responses/abc'), 'mnn-edge/d1/responses/abc');
  t.is(resolveResponseTopic('d1', 'mnn-edge/+/responses/abc'), 'mnn-edge/d1/responses/abc');
  t.is(resolveResponseTopic('d1', 'mnn-edge/d2/responses/abc'), undefined);
  t.is(resolveResponseTopic('d1', 'mnn-edge/d1/responsesX'), undefined);
  t.is(resolveResponseTopic('d1', 'mnn-edge/d1/responses/#'), undefined);
  t.is(resolveResponseTopic('d1', 'operators/inbox'), undefined);
});

test('encode validates outgoing messages and names the bad key', (t) => {
  t.is(
    encode('status', { v: 1, state: 'online', deviceId: 'd1' }),
    '{"v":1,"state":"online","deviceId":"d1"}',
  );
  const err = t.throws(() => encode('status', { v: 1, state: 'sleeping', deviceId: 'd1' }), {
    instanceOf: ProtocolViolation,
  });
  t.is(err.message, 'Invalid status message: state: expected one of "online", "offline", got "sleeping"');
});

test('decode validates incoming messages', (t) => {
  t.deepEqual(decode('event', '{"v":1,"deviceId":"d","ts":1,"type":"model.loaded"}'), {
    v: 1,
    deviceId: 'd',
    ts: 1,
    type: 'model.loaded',
  });
  t.throws(() => decode('event', '{"v":1,"deviceId":"d","ts":1}'), {
    message: 'Invalid event message: type: is required but missing',
  });
  t.throws(() => decode('event', '{'), { code: 'EBADJSON' });
  t.throws(() => decode('event', `${'['.repeat(100_000)}${']'.repeat(100_000)}`), {
    code: 'ETOODEEP',
    message: 'Event message nests deeper than 64 levels',
  });
});

test('the published JSON schemas are the ones the code validates with', (t) => {
  for (const [name, text] of Object.entries(exportProtocolSchemas())) {
    const onDisk = readFileSync(join(repoRoot, 'docs', 'schemas', 'protocol', name), 'utf8');
    t.is(onDisk, text, `docs/schemas/protocol/${name} is stale: run npx tsx agent/fleet/export-schemas.ts`);
  }
});

test('selectors: every given criterion must match, any entry of a list', (t) => {
  const self = { deviceId: 'd1', tags: ['lab', 'voice'], boardFamily: 'rk3588' };
  t.true(selectorMatches(undefined, self));
  t.true(selectorMatches({}, self));
  t.true(selectorMatches({ tags: ['voice', 'x'] }, self));
  t.false(selectorMatches({ tags: ['x'] }, self));
  t.true(selectorMatches({ deviceIds: ['d0', 'd1'], boardFamilies: ['rk3588'] }, self));
  t.false(selectorMatches({ deviceIds: ['d1'], boardFamilies: ['qcs6490'] }, self));
  t.false(selectorMatches({ boardFamilies: ['rk3588'] }, { deviceId: 'd1', tags: [] }));
});

function server(maxPayloadBytes = 1024) {
  const registry = new CommandRegistry();
  registry.register<{ n: number }>({
    name: 'double',
    summary: 'doubles n',
    params: {
      type: 'object',
      additionalProperties: false,
      required: ['n'],
      properties: { n: { type: 'number' } },
    },
    handler: (p) => p.n * 2,
  });
  registry.register({ name: 'boom', summary: 'throws', handler: () => Promise.reject(new Error('kaput')) });
  registry.register({ name: 'bigint', summary: 'unserialisable', handler: () => ({ x: 1n }) });
  return new CommandServer({
    registry,
    self: { deviceId: 'd1', tags: ['lab'], boardFamily: 'rk3588' },
    maxPayloadBytes,
    clock,
    logger: createMemoryLogger(),
  });
}

const msg = (name: string, payload: string | Buffer, extra: object = {}) => ({
  topic: `mnn-edge/d1/cmd/${name}`,
  payload: typeof payload === 'string' ? Buffer.from(payload) : payload,
  ...extra,
});

test('a valid command runs and answers on the requested topic with the id', async (t) => {
  const out = await server().handle(
    msg('double', '{"id":"r1","params":{"n":21},"responseTopic":"mnn-edge/d1/responses/x"}'),
  );
  t.is(out?.topic, 'mnn-edge/d1/responses/x');
  t.deepEqual(out?.response, {
    v: 1,
    deviceId: 'd1',
    command: 'double',
    ok: true,
    ts: 1_800_000_000_000,
    id: 'r1',
    result: 42,
  });
  t.is(out?.payload, JSON.stringify(out?.response));
});

test('MQTT 5 properties: response topic and correlation data are used and echoed', async (t) => {
  const corr = Buffer.from('req-9');
  const out = await server().handle(
    msg('double', '{"params":{"n":1}}', { responseTopic: 'mnn-edge/d1/responses/p', correlationData: corr }),
  );
  t.is(out?.topic, 'mnn-edge/d1/responses/p');
  t.is(out?.correlationData, corr);
  t.is(out?.response.id, 'req-9');
});

test('errors name the problem exactly', async (t) => {
  const s = server(64);
  const cases: [string, string | Buffer, string, string][] = [
    ['double', '{"params":', 'EBADJSON', 'Payload is not valid JSON: Unexpected end of JSON input'],
    ['double', '[1]', 'ESCHEMA', 'Payload must be a JSON object, got an array'],
    [
      'double',
      '{"params":{"n":"x"}}',
      'EPARAMS',
      'Invalid params for double: n: expected number, got string "x"',
    ],
    ['double', '{}', 'EPARAMS', 'Invalid params for double: n: is required but missing'],
    ['double', '{"v":2}', 'ESCHEMA', 'Invalid command request: v: expected 1, got 2'],
    ['nope', '{}', 'EUNKNOWN', 'Unknown command "nope" (known: bigint, boom, double)'],
    ['double', Buffer.alloc(65, 32), 'ETOOLARGE', 'Payload of 65 bytes exceeds the limit of 64 bytes'],
    ['double', '{"expiresAt":5}', 'EEXPIRED', 'Request expired at 1970-01-01T00:00:00.005Z'],
    ['boom', '', 'EHANDLER', 'boom failed: kaput'],
    [
      'bigint',
      '',
      'EHANDLER',
      'bigint returned an unserialisable result: Do not know how to serialize a BigInt',
    ],
    [
      'double',
      '{"selector":{"tags":["lab"]}}',
      'ESCHEMA',
      'A selector is only allowed on fleet commands (mnn-edge/fleet/cmd/…)',
    ],
  ];
  for (const [name, payload, code, message] of cases) {
    const out = await s.handle(msg(name, payload));
    t.is(out?.topic, 'mnn-edge/d1/responses', name);
    t.deepEqual(out?.response.error, { code, message }, `${name} ${String(payload).slice(0, 20)}`);
    t.deepEqual(validate(commandResponseSchema, JSON.parse(out!.payload)), []);
  }
  const foreign = await s.handle(msg('double', '{"responseTopic":"elsewhere"}'));
  t.is(foreign?.response.error?.code, 'ERESPONSETOPIC');
  t.is(
    foreign?.response.error?.message,
    'Response topic "elsewhere" is not allowed: use mnn-edge/d1/responses[/…] (or mnn-edge/+/responses/… for fleet commands)',
  );
});

test('fleet commands for other devices are ignored silently', async (t) => {
  const s = server();
  const fleet = (payload: object) => ({
    topic: 'mnn-edge/fleet/cmd/double',
    payload: Buffer.from(JSON.stringify(payload)),
  });
  t.is(await s.handle(fleet({ params: { n: 1 }, selector: { tags: ['prod'] } })), undefined);
  const mine = await s.handle(
    fleet({ params: { n: 1 }, selector: { tags: ['lab'] }, responseTopic: 'mnn-edge/+/responses/q' }),
  );
  t.is(mine?.topic, 'mnn-edge/d1/responses/q');
  t.is(mine?.response.result, 2);
});

test('fuzz: 2,000 random payloads always yield exactly one schema-valid response, never a throw', async (t) => {
  const s = server(512);
  let seed = 7;
  const rnd = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const fragments = [
    '{',
    '}',
    '[',
    ']',
    '"',
    ':',
    ',',
    'params',
    'id',
    'n',
    'null',
    '1e999',
    '-',
    'true',
    '\\u0000',
    'selector',
    'v',
  ];
  for (let i = 0; i < 2000; i++) {
    const kind = i % 3;
    let payload: Buffer;
    if (kind === 0)
      payload = Buffer.from(Array.from({ length: Math.floor(rnd() * 80) }, () => Math.floor(rnd() * 256)));
    else if (kind === 1)
      payload = Buffer.from(
        Array.from(
          { length: Math.floor(rnd() * 30) },
          () => fragments[Math.floor(rnd() * fragments.length)],
        ).join(''),
      );
    else
      payload = Buffer.from(
        JSON.stringify({ params: { n: rnd() > 0.5 ? 'x' : rnd() }, id: rnd() > 0.5 ? 'a' : 3 }),
      );
    const out = await s.handle(msg(rnd() > 0.9 ? 'unknown-x' : 'double', payload));
    t.truthy(out);
    const r = JSON.parse(out!.payload) as CommandResponse;
    if (validate(commandResponseSchema, r).length > 0)
      t.fail(`invalid response for ${payload.toString('hex')}`);
  }
  t.pass();
});
