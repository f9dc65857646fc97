// The Wyoming server on a running agent, driven by a client written from the protocol's README
// (test/helpers/wyoming-client.ts): describe/info, speech to text of the fixture WAV in 20 ms chunks, text to
// speech with espeak-ng, the conversation program, malformed frames, limits, and the mDNS announcement (on
// loopback). The engine-free parts run everywhere (engine hosts that cannot start stand in for a board without
// MNN); the model answers need MNN and skip with one line without it.
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { defaultConfig } from '../../agent/config/defaults.js';
import { parseConfig } from '../../agent/config/load.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from '../../agent/config/sections/slots.js';
import { createAgent } from '../../agent/main.js';
import { decodeMessage, encodeQuery, type Message, TYPE } from '../../agent/mdns/dns-packet.js';
import { createMdnsModule } from '../../agent/mdns/module.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { findExecutable } from '../../agent/workloads/voice/executable.js';
import { wyomingMdnsServices } from '../../agent/workloads/wyoming/start.js';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { expectedOutput } from '../engine/_engine.js';
import { type FixtureModel, slotRuntimeModules } from '../engine/_slots.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
import { until } from '../helpers/until.js';
import { frame, WyomingTestClient } from '../helpers/wyoming-client.js';
import { malformedFrames } from '../helpers/wyoming-malformed.js';

const noEngineReason = unavailableMessage('the engine addon is not built');
const hasEspeak = findExecutable('espeak-ng') !== undefined;

interface StartOptions {
  engine?: boolean;
  slots?: SlotsConfig;
  fixtures?: FixtureModel[];
  wyoming?: Record<string, unknown>;
  voice?: Record<string, unknown>;
  maxSessions?: number;
  /** Announce on loopback to this UDP port. */
  mdnsTo?: number;
}

async function startAgent(t: ExecutionContext, o: StartOptions = {}) {
  const { dataDir, config: base } = loopbackAgentConfig(
    'mnn-edge-wyoming-',
    o.maxSessions ? { maxSessions: o.maxSessions } : {},
  );
  const config: AgentConfig = {
    ...base,
    slots: o.slots ?? { 'voice.asr': { model: 'tiny-omni-audio' }, 'voice.llm': { model: 'tiny-llm' } },
    voice: { maxNewTokens: 32, systemPrompt: '', ...o.voice },
    wyoming: { enabled: true, bind: '127.0.0.1', port: 0, ...o.wyoming },
  };
  const slots = slotRuntimeModules(
    o.fixtures ?? ['tiny-omni-audio', 'tiny-llm'],
    o.engine ? {} : { hosts: unavailableHosts(noEngineReason) },
  );
  const workloads = createWorkloadsModule({ runtime: slots.runtime, agentVersion: 'test' });
  const mdns = createMdnsModule({
    board: () => 'Test Board',
    version: 'test',
    host: 'testhost',
    addresses: () => ['127.0.0.1'],
    extraServices: () => wyomingMdnsServices(workloads),
    ...(o.mdnsTo
      ? {
          socket: {
            bind: '127.0.0.1',
            port: 0,
            multicast: false,
            announceTo: { address: '127.0.0.1', port: o.mdnsTo },
          },
        }
      : {}),
  });
  const logs = createMemoryLogger();
  const agent = createAgent(config, {
    logger: logs,
    modules: [...slots.modules, workloads, mdns],
  });
  await agent.start();
  await slots.settled();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const port = workloads.wyomingAnnouncement()?.port;
  const connect = async () => {
    if (port === undefined) throw new Error('the Wyoming server is not listening');
    const c = await WyomingTestClient.connect(port);
    t.teardown(() => c.socket.destroy());
    return c;
  };
  const healthy = async () => (await fetch(`http://127.0.0.1:${agent.http.port}/healthz`)).status === 200;
  return { agent, workloads, mdns, port, connect, healthy, logs, runtime: slots.runtime };
}

test('off unless configured; the image config turns it on at port 10300', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-wyoming-off-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const base = defaultConfig({});
  t.is(base['wyoming'], undefined);
  const workloads = createWorkloadsModule({ runtime: () => undefined });
  const mdns = createMdnsModule({
    board: () => undefined,
    version: 'test',
    extraServices: () => wyomingMdnsServices(workloads),
  });
  const agent = createAgent(
    { ...base, dataDir, root: dataDir, http: { ...base.http, bind: '127.0.0.1', port: 0 } },
    { logger: createMemoryLogger(), modules: [workloads, mdns] },
  );
  await agent.start();
  t.is(workloads.wyomingAnnouncement(), undefined);
  t.is(mdns.responder(), undefined, 'nothing is announced');
  await agent.stop('test');
  const image = JSON.parse(
    readFileSync(
      new URL('../../yocto/meta-mnn-edge/recipes-mnn-edge/mnn-edge/files/agent.json', import.meta.url),
      'utf8',
    ),
  ) as unknown;
  const parsed = parseConfig(image, 'agent.json', {});
  t.like(parsed['wyoming'], { enabled: true, port: 10300, bind: '0.0.0.0', mdns: true });
  t.throws(() => parseConfig({ wyoming: { port: 'ten' } }, 'agent.json', {}), {
    message: 'Invalid configuration in agent.json: wyoming.port: expected integer, got string "ten"',
  });
});

test('a port already in use: the agent starts without the Wyoming server, says why, announces nothing', async (t) => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => blocker.close(() => r())));
  const taken = (blocker.address() as AddressInfo).port;
  const { workloads, healthy, logs } = await startAgent(t, { wyoming: { port: taken } });
  t.is(workloads.wyomingAnnouncement(), undefined);
  t.true(await healthy());
  const line = logs.lines.find((l) => l.includes('Wyoming server not started: cannot listen'));
  t.truthy(line);
  t.regex(line!, new RegExp(`"port":${taken}.*EADDRINUSE`));
});

test('describe/info across cut TCP writes, unknown events ignored, roles without a model left out', async (t) => {
  const { connect } = await startAgent(t);
  const c = await connect();
  // An unknown event with data and payload, then describe, cut into pieces at awkward places.
  const bytes = Buffer.concat([
    frame('frobnicate', { level: 11 }, Buffer.alloc(700, 1)),
    frame('describe'),
    frame('ping', { text: 'hi' }, undefined, { inline: true }),
  ]);
  await c.write(bytes, [1, 10, 30, 200, bytes.length - 20, bytes.length - 1]);
  const info = await c.next('info');
  await c.next('pong');
  t.deepEqual(
    c.events.map((e) => e.type),
    ['info', 'pong'],
  );
  t.deepEqual(c.events[1]!.data, { text: 'hi' });
  // Without MNN neither ASR nor the conversation can serve: they are left out; espeak-ng still speaks.
  t.is(info.data['asr'], undefined);
  t.is(info.data['handle'], undefined);
  if (hasEspeak)
    t.like((info.data['tts'] as Array<Record<string, unknown>>)[0], { name: 'espeak-ng', installed: true });
  // Asking anyway gets the reason, and the connection stays up.
  c.send('transcribe', { language: 'en' });
  const err = await c.next('error');
  t.deepEqual(err.data, { text: noEngineReason, code: 'ENOENGINE' });
  c.send('audio-start', { rate: 16000, width: 2, channels: 1 });
  c.send('audio-chunk', { rate: 16000, width: 2, channels: 1 }, Buffer.alloc(640));
  c.send('audio-stop');
  c.send('transcript', { text: 'Hello' });
  const second = await c.next('error', c.events.indexOf(err) + 1);
  t.is(
    second.data['code'],
    'ENOENGINE',
    'the refused audio stream was dropped quietly; the conversation says why',
  );
  c.send('describe');
  await c.next('info', c.events.indexOf(second) + 1);
  t.is(c.events.filter((e) => e.type === 'error').length, 2);
});

if (hasEspeak) {
  test('synthesize with espeak-ng: audio-start, PCM chunks of the announced format, audio-stop; streamed text too', async (t) => {
    const { connect } = await startAgent(t);
    const c = await connect();
    c.send('synthesize', { text: 'Hello from the board. This is a test.', voice: { name: 'en-us' } });
    const stop = await c.next('audio-stop');
    const types = c.events.map((e) => e.type);
    t.is(types[0], 'audio-start');
    t.is(types.at(-1), 'audio-stop');
    const start = c.events[0]!.data;
    t.deepEqual(start, { rate: 22050, width: 2, channels: 1 });
    const chunks = c.events.filter((e) => e.type === 'audio-chunk');
    t.true(chunks.length > 1, `${chunks.length} chunks`);
    for (const ch of chunks) {
      t.deepEqual(ch.data, start);
      t.is(ch.payload!.length % 2, 0);
    }
    const samples = chunks.reduce((n, ch) => n + ch.payload!.length / 2, 0);
    t.true(samples / 22050 > 1, `${(samples / 22050).toFixed(2)} s of speech`);
    const loud = chunks.some((ch) => {
      for (let i = 0; i < ch.payload!.length; i += 2)
        if (Math.abs(ch.payload!.readInt16LE(i)) > 3000) return true;
      return false;
    });
    t.true(loud, 'audible speech');

    // Too long: an error with the limit, and the connection still works.
    const from = c.events.indexOf(stop) + 1;
    c.send('synthesize', { text: 'a'.repeat(2001) });
    const tooLong = await c.next('error', from);
    t.deepEqual(tooLong.data, {
      code: 'ETOOLARGE',
      text: 'Text of 2001 characters is over the limit of 2000 (wyoming.maxTextChars)',
    });

    // Streaming: sentences are spoken as they complete; the compatibility `synthesize` is not spoken again.
    const s0 = c.events.length;
    c.send('synthesize-start', { voice: { name: 'en-us' } });
    c.send('synthesize-chunk', { text: 'First sentence here. Sec' });
    c.send('synthesize-chunk', { text: 'ond one' });
    c.send('synthesize', { text: 'First sentence here. Second one' });
    c.send('synthesize-stop');
    await c.next('synthesize-stopped', s0);
    const streamed = c.events.slice(s0).map((e) => e.type);
    t.is(streamed.filter((x) => x === 'audio-start').length, 2, streamed.join(' '));
    t.is(streamed.filter((x) => x === 'audio-stop').length, 2);
    t.is(streamed.at(-1), 'synthesize-stopped');
    t.is(streamed.at(-2), 'audio-stop');
    t.false(streamed.includes('error'));
  });
}

test('200 malformed frames: each gets an error event or a clean close; the agent stays healthy', async (t) => {
  const { connect, healthy } = await startAgent(t);
  const frames = malformedFrames();
  t.is(frames.length, 200);
  let errors = 0;
  for (const f of frames) {
    const c = await connect();
    await c.write(f.bytes);
    c.socket.end();
    await c.closed;
    const types = c.events.map((e) => e.type);
    t.true(
      types.every((x) => x === 'error'),
      `${f.name}: ${types.join(' ')}`,
    );
    if (types.length > 0) {
      errors++;
      t.regex(String(c.events[0]!.data['code']), /^E[A-Z]+$/, f.name);
      t.true(String(c.events[0]!.data['text']).length > 0, f.name);
    }
  }
  t.log(`${errors} of 200 answered with an error, the rest closed cleanly`);
  t.true(errors > 100, `${errors} of 200 answered with an error`);
  t.true(await healthy());
  const c = await connect();
  c.send('describe');
  await c.next('info');
});

test('limits: the shared session cap, the allow-list, the shared secret and the idle timeout', async (t) => {
  {
    // Connections are limited apart from sessions: describe is answered on every accepted connection.
    const { connect } = await startAgent(t, { maxSessions: 1, wyoming: { maxConnections: 2 } });
    const a = await connect();
    const b = await connect();
    for (const x of [a, b]) x.send('describe');
    await a.next('info');
    await b.next('info');
    const c = await connect();
    await c.closed;
    t.like(c.events[0], { type: 'error', data: { code: 'ECONNLIMIT', retry_after_s: 5 } });
    t.regex(
      String(c.events[0]!.data['text']),
      /^Too many Wyoming connections: 2 of 2 are open \(wyoming\.maxConnections\); retry in 5 s$/,
    );
    b.close();
    await b.closed;
    // The server may see the close a moment after the client: retried until the slot is free.
    await until(async () => {
      const d = await connect();
      d.send('describe');
      await Promise.race([d.next('info').catch(() => undefined), d.closed]);
      const answered = d.events.some((e) => e.type === 'info');
      d.close();
      return answered;
    }, 'a connection accepted after one closed');
  }
  {
    const { connect } = await startAgent(t, { wyoming: { allow: ['10.1.2.0/24'] } });
    const c = await connect();
    await c.closed;
    t.deepEqual(
      c.events.map((e) => e.data),
      [{ code: 'EFORBIDDEN', text: 'Client 127.0.0.1 is not in wyoming.allow' }],
    );
  }
  {
    const { connect } = await startAgent(t, {
      wyoming: { allow: ['127.0.0.0/8'], secret: 's3cret-s3cret-s3cret', idleTimeoutS: 5 },
    });
    const wrong = await connect();
    wrong.send('describe');
    await wrong.closed;
    t.is(wrong.events[0]?.data['code'], 'EAUTH');
    const right = await connect();
    right.send('auth', { secret: 's3cret-s3cret-s3cret' });
    right.send('describe');
    await right.next('info');
    // Silent for longer than idleTimeoutS: closed with the reason.
    await right.closed;
    t.deepEqual(right.events.at(-1)?.data, {
      code: 'ETIMEDOUT',
      text: 'No event for 5 s (wyoming.idleTimeoutS): closing',
    });
  }
});

test('a client that does not read its answers is no longer read: the backlog stays in its own socket', async (t) => {
  const { connect, healthy } = await startAgent(t);
  const c = await connect();
  c.socket.pause(); // never reads a pong
  const ping = frame('ping', { text: 'x'.repeat(200) });
  const batch = Buffer.concat(Array.from({ length: 1000 }, () => ping));
  for (let i = 0; i < 200; i++) {
    c.socket.write(batch);
    await sleep(2);
  }
  await sleep(500);
  // 50 MB of pings; the agent stopped reading once its answers backed up, so most of it is still waiting here.
  t.true(
    c.socket.writableLength > 20 * 1024 * 1024,
    `${c.socket.writableLength} bytes still queued by the client`,
  );
  t.true(await healthy());
  c.socket.destroy();
});

test('mDNS carries _wyoming._tcp with the server port (loopback)', async (t) => {
  const client = createSocket('udp4');
  t.teardown(() => new Promise<void>((r) => client.close(() => r())));
  const received: Message[] = [];
  client.on('message', (buf) => received.push(decodeMessage(buf)));
  await new Promise<void>((r) => client.bind(0, '127.0.0.1', () => r()));
  const { mdns, port } = await startAgent(t, { mdnsTo: client.address().port });
  const responder = mdns.responder();
  t.truthy(responder);
  const waitFor = async (pred: (m: Message) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const m = received.find(pred);
      if (m) return m;
      await sleep(20);
    }
    throw new Error('no such mDNS packet');
  };
  const announced = await waitFor((m) => m.answers.some((a) => a.type === TYPE.SRV));
  const srv = announced.answers.find((a) => a.type === TYPE.SRV) as { name: string; port: number };
  t.regex(srv.name, /^mnn-edge [0-9a-f-]{8} \(Test Board\)\._wyoming\._tcp\.local$/);
  t.is(srv.port, port!);
  received.length = 0;
  client.send(
    encodeQuery([{ name: '_wyoming._tcp.local', type: TYPE.PTR, unicastResponse: true }], 7),
    responder!.port,
    '127.0.0.1',
  );
  const reply = await waitFor((m) => m.id === 7);
  t.deepEqual(
    reply.answers.map((a) => [a.type, a.name]),
    [[TYPE.PTR, '_wyoming._tcp.local']],
  );
  const ptr = reply.answers[0] as { target: string };
  t.is(ptr.target, srv.name);
  client.send(
    encodeQuery([{ name: srv.name, type: TYPE.SRV, unicastResponse: true }], 8),
    responder!.port,
    '127.0.0.1',
  );
  const srvReply = await waitFor((m) => m.id === 8);
  t.like(srvReply.answers[0], { type: TYPE.SRV, port, target: 'testhost.local' });
});

const engine = engineAvailability();
if (!engine.available) {
  skipWithLine(`SKIP Wyoming model answers: ${unavailableMessage(engine.reason)}`);
} else {
  test('transcribe the fixture WAV in 20 ms chunks; converse with history; info follows placement', async (t) => {
    const { connect, runtime } = await startAgent(t, {
      engine: true,
      wyoming: { asr: { instruction: 'Hello', maxNewTokens: 32 } },
    });
    const c = await connect();
    c.send('describe');
    const info = await c.next('info');
    const model = (role: string) =>
      (
        (info.data[role] as Array<Record<string, unknown>>)[0]!['models'] as Array<Record<string, unknown>>
      )[0];
    t.like(model('asr'), { name: 'tiny-omni-audio', installed: true, version: '1.0.0' });
    t.like(model('handle'), { name: 'tiny-llm', installed: true, version: '1.0.0' });

    const wav = readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav'));
    const pcm = wav.subarray(44);
    const format = { rate: 16000, width: 2, channels: 1 };
    c.send('transcribe', { language: 'en' });
    c.send('audio-start', format);
    for (let at = 0; at < pcm.length; at += 640) c.send('audio-chunk', format, pcm.subarray(at, at + 640));
    c.send('audio-stop');
    const transcript = await c.next('transcript');
    const expected = expectedOutput('tiny-omni-audio', 'media/speech-hello-16k.wav');
    t.is(transcript.data['text'], expected.text.trim());
    await c.next('transcript-stop');
    const chunks = c.events.filter((e) => e.type === 'transcript-chunk').map((e) => String(e.data['text']));
    t.is(chunks.join('').trim(), expected.text.trim());
    t.true(
      c.events.findIndex((e) => e.type === 'transcript-start') <
        c.events.findIndex((e) => e.type === 'transcript-chunk'),
    );

    // The handle program: tiny-llm's recorded answer to "Hello" (no system prompt, 32 tokens), streamed.
    const h0 = c.events.length;
    c.send('transcript', { text: 'Hello', context: { conversation_id: 'kitchen' } });
    const handled = await c.next('handled', h0);
    await c.next('handled-stop', h0);
    const llm = expectedOutput('tiny-llm');
    t.is(handled.data['text'], llm.text);
    t.deepEqual(handled.data['context'], { conversation_id: 'kitchen' });
    t.is(
      c.events
        .slice(h0)
        .filter((e) => e.type === 'handled-chunk')
        .map((e) => e.data['text'])
        .join(''),
      llm.text,
    );
    // The same conversation continues (its history is in the prompt); another one starts afresh.
    const h1 = c.events.length;
    c.send('transcript', { text: 'Hello', context: { conversation_id: 'kitchen' } });
    const again = await c.next('handled', h1);
    t.not(again.data['text'], llm.text);
    const h2 = c.events.length;
    c.send('transcript', { text: 'Hello', context: { conversation_id: 'garage' } });
    const garage = await c.next('handled', h2);
    t.is(garage.data['text'], llm.text);
    // handled-stop follows handled; wait for it so that it is not taken for the next request's below.
    await c.next('handled-stop', c.events.indexOf(garage) + 1);

    // A new transcribe cancels the running request: the conversation answer never comes.
    const h3 = c.events.length;
    c.write(Buffer.concat([frame('transcript', { text: 'Hello' }), frame('transcribe'), frame('describe')]));
    await c.next('info', h3);
    // Requests run one after another: had the first not been cancelled, its answer would come before this one.
    c.send('transcript', { text: 'Hello', context: { conversation_id: 'garage-2' } });
    await c.next('handled-stop', h3);
    t.deepEqual(
      c.events
        .slice(h3)
        .filter((e) => e.type === 'handled' || e.type === 'error')
        .map((e) => e.data['context']),
      [{ conversation_id: 'garage-2' }],
    );

    // Placement changes: without voice.asr the next describe leaves asr out.
    await runtime()!.configure(slotSpecsFromConfig({ 'voice.llm': { model: 'tiny-llm' } }));
    await runtime()!.settled();
    const h4 = c.events.length;
    c.send('describe');
    const after = await c.next('info', h4);
    t.is(after.data['asr'], undefined);
    t.like(((after.data['handle'] as Array<Record<string, unknown>>)[0]!['models'] as unknown[])[0], {
      name: 'tiny-llm',
    });
  });
}
