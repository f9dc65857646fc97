import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { defaultConfig } from '../../agent/config/defaults.js';
import { createAgent } from '../../agent/main.js';
import {
  DnsFormatError,
  decodeMessage,
  encodeName,
  encodeQuery,
  encodeResponse,
  type Message,
  TYPE,
} from '../../agent/mdns/dns-packet.js';
import { createMdnsModule } from '../../agent/mdns/module.js';
import { createMdnsResponder, sanitizeLabel } from '../../agent/mdns/responder.js';
import { createMemoryLogger } from '../../lib/log.js';

// The DNS-SD responder over real UDP on loopback (no multicast: tests never send beyond 127.0.0.1), queried as
// a legacy unicast resolver would, and its wire format checked field by field.

test('records survive an encode/decode round trip, including IPv6 compression and TXT entries', (t) => {
  const packet = encodeResponse({
    answers: [
      {
        type: TYPE.PTR,
        name: '_http._tcp.local',
        target: 'dev._http._tcp.local',
        ttl: 4500,
        cacheFlush: false,
      },
      {
        type: TYPE.SRV,
        name: 'dev._http._tcp.local',
        priority: 0,
        weight: 0,
        port: 8080,
        target: 'rock5b.local',
        ttl: 120,
        cacheFlush: true,
      },
      {
        type: TYPE.TXT,
        name: 'dev._http._tcp.local',
        entries: ['path=/', 'board=Radxa ROCK 5B'],
        ttl: 4500,
        cacheFlush: true,
      },
      { type: TYPE.A, name: 'rock5b.local', address: '192.168.1.20', ttl: 120, cacheFlush: true },
      { type: TYPE.AAAA, name: 'rock5b.local', address: '2001:db8::1', ttl: 120, cacheFlush: true },
    ],
  });
  const m = decodeMessage(packet);
  t.true(m.isResponse);
  t.deepEqual(m.answers[1], {
    type: TYPE.SRV,
    name: 'dev._http._tcp.local',
    priority: 0,
    weight: 0,
    port: 8080,
    target: 'rock5b.local',
    ttl: 120,
    cacheFlush: true,
  });
  t.deepEqual(m.answers[2], {
    type: TYPE.TXT,
    name: 'dev._http._tcp.local',
    entries: ['path=/', 'board=Radxa ROCK 5B'],
    ttl: 4500,
    cacheFlush: true,
  });
  t.is((m.answers[3] as { address: string }).address, '192.168.1.20');
  t.is((m.answers[4] as { address: string }).address, '2001:db8:0:0:0:0:0:1');
});

test('compressed names are followed; loops, truncation and oversize labels are clear errors', (t) => {
  // Question 1: "_http._tcp.local"; question 2: "x" + pointer to offset 12 (question 1's name).
  const q1 = encodeName('_http._tcp.local');
  const header = Buffer.from([0, 7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]);
  const tail = Buffer.from([0, 12, 0, 1]);
  const q2 = Buffer.concat([Buffer.from([1, 0x78, 0xc0, 12]), tail]);
  const m = decodeMessage(Buffer.concat([header, q1, tail, q2]));
  t.deepEqual(
    m.questions.map((q) => q.name),
    ['_http._tcp.local', 'x._http._tcp.local'],
  );
  const loop = Buffer.concat([
    Buffer.from([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
    Buffer.from([0xc0, 12, 0, 12, 0, 1]),
  ]);
  t.throws(() => decodeMessage(loop), {
    instanceOf: DnsFormatError,
    message: 'Compression pointer loop in name at offset 12',
  });
  t.throws(() => decodeMessage(Buffer.alloc(5)), {
    message: 'Packet of 5 bytes is shorter than a DNS header (12)',
  });
  const cut = Buffer.concat([Buffer.from([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from([5, 0x61])]);
  t.throws(() => decodeMessage(cut), { message: 'Label at offset 12 runs past the end of the packet' });
  t.throws(() => encodeName(`${'a'.repeat(64)}.local`), {
    message: `Label "${'a'.repeat(64)}" is longer than 63 bytes`,
  });
});

test('instance labels lose dots and are capped at 63 bytes', (t) => {
  t.is(sanitizeLabel('mnn-edge 1234 (Radxa ROCK 5B v1.42)'), 'mnn-edge 1234 (Radxa ROCK 5B v1-42)');
  t.is(Buffer.byteLength(sanitizeLabel('é'.repeat(50))), 62);
});

function udp(t: ExecutionContext): Promise<{ socket: Socket; next(): Promise<Message> }> {
  const socket = createSocket('udp4');
  t.teardown(() => new Promise<void>((r) => socket.close(() => r())));
  const queue: Message[] = [];
  const waiters: Array<(m: Message) => void> = [];
  socket.on('message', (buf) => {
    const m = decodeMessage(buf);
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  return new Promise((resolve) =>
    socket.bind(0, '127.0.0.1', () =>
      resolve({
        socket,
        next: () => {
          const m = queue.shift();
          return m ? Promise.resolve(m) : new Promise((r) => waiters.push(r));
        },
      }),
    ),
  );
}

test('announces at start, answers PTR/SRV/TXT/A queries about itself only, and says goodbye at stop', async (t) => {
  const client = await udp(t);
  const clientPort = client.socket.address().port;
  const responder = createMdnsResponder({
    services: [
      {
        instance: 'mnn-edge 0a1b2c3d (Radxa ROCK 5B)',
        host: 'rock5b',
        port: 8080,
        txt: { path: '/', board: 'Radxa ROCK 5B' },
      },
    ],
    addresses: () => ['192.168.1.20'],
    socket: {
      bind: '127.0.0.1',
      port: 0,
      multicast: false,
      announceTo: { address: '127.0.0.1', port: clientPort },
    },
    logger: createMemoryLogger(),
  });
  await responder.start();
  const announced = await client.next();
  t.deepEqual(
    announced.answers.map((a) => [a.type, a.name, a.ttl]),
    [
      [TYPE.PTR, '_http._tcp.local', 4500],
      [TYPE.PTR, '_services._dns-sd._udp.local', 4500],
      [TYPE.SRV, 'mnn-edge 0a1b2c3d (Radxa ROCK 5B)._http._tcp.local', 120],
      [TYPE.TXT, 'mnn-edge 0a1b2c3d (Radxa ROCK 5B)._http._tcp.local', 4500],
      [TYPE.A, 'rock5b.local', 120],
    ],
  );
  await client.next(); // the second announcement, one second later

  client.socket.send(
    encodeQuery([{ name: '_HTTP._tcp.local', type: TYPE.PTR, unicastResponse: false }], 0x1234),
    responder.port,
    '127.0.0.1',
  );
  const reply = await client.next();
  t.is(reply.id, 0x1234, 'legacy unicast replies echo the query id');
  t.is(reply.questions[0]?.name, '_HTTP._tcp.local');
  t.deepEqual(reply.answers[0], {
    type: TYPE.PTR,
    name: '_http._tcp.local',
    target: 'mnn-edge 0a1b2c3d (Radxa ROCK 5B)._http._tcp.local',
    ttl: 4500,
    cacheFlush: false,
  });

  client.socket.send(
    encodeQuery([{ name: 'rock5b.local', type: TYPE.A, unicastResponse: true }]),
    responder.port,
    '127.0.0.1',
  );
  const a = await client.next();
  t.deepEqual(
    a.answers.map((r) => (r as { address: string }).address),
    ['192.168.1.20'],
  );

  // A question about someone else gets no answer: the next packet is the reply to the following question.
  client.socket.send(
    encodeQuery([{ name: 'other.local', type: TYPE.A, unicastResponse: true }]),
    responder.port,
    '127.0.0.1',
  );
  client.socket.send(Buffer.from([1, 2, 3]), responder.port, '127.0.0.1');
  client.socket.send(
    encodeQuery([
      { name: 'mnn-edge 0a1b2c3d (Radxa ROCK 5B)._http._tcp.local', type: TYPE.TXT, unicastResponse: true },
    ]),
    responder.port,
    '127.0.0.1',
  );
  const txt = await client.next();
  t.deepEqual(
    txt.answers.map((r) => (r as { entries?: string[] }).entries),
    [['path=/', 'board=Radxa ROCK 5B']],
  );

  await responder.stop();
  const goodbye = await client.next();
  t.true(goodbye.answers.every((r) => r.ttl === 0));
  await responder.stop();
});

test('the mdns module stays silent unless http.mdns is on (development defaults and tests)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-mdns-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = defaultConfig({});
  t.false(base.http.mdns);
  const module = createMdnsModule({ board: () => 'Radxa ROCK 5B', version: 'test' });
  const agent = createAgent(
    { ...base, dataDir: dir, root: dir, http: { ...base.http, bind: '127.0.0.1', port: 0 } },
    { logger: createMemoryLogger(), modules: [module] },
  );
  await agent.start();
  t.is(module.responder(), undefined);
  await agent.stop();
});
