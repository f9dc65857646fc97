// Wyoming connections Home Assistant can count on, tried with the upstream-style client: `describe` on any
// accepted connection however many sessions run, live sessions claimed by flows and given back however the
// connection ends (1,000 connections broken in every malformed-frame way, resets, timeouts), refusals as an
// `error` event with a code and a retry hint before the close, and counted.
import test, { type ExecutionContext } from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { unavailableHosts } from '../../agent/runtime/module.js';
import { findExecutable } from '../../agent/workloads/voice/executable.js';
import { unavailableMessage } from '../../engine/index.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { until } from '../helpers/until.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';
import { WyomingTestClient } from '../helpers/wyoming-client.js';
import { malformedFrames } from '../helpers/wyoming-malformed.js';

const hasEspeak = findExecutable('espeak-ng') !== undefined;

async function startAgent(t: ExecutionContext, maxSessions: number, wyoming: Record<string, unknown> = {}) {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-wyoming-sessions-', { maxSessions });
  const config: AgentConfig = {
    ...base,
    slots: { 'voice.asr': { model: 'tiny-omni-audio' }, 'voice.llm': { model: 'tiny-llm' } },
    voice: { systemPrompt: '' },
    wyoming: { enabled: true, bind: '127.0.0.1', port: 0, ...wyoming },
  };
  // No engine: the ASR and the conversation refuse with the reason; espeak-ng speaks without one.
  const { workloads } = await startWorkloadsAgent(t, {
    dataDir,
    config,
    models: ['tiny-omni-audio', 'tiny-llm'],
    hosts: unavailableHosts(unavailableMessage('the engine addon is not built')),
    workloadsDeps: () => ({ agentVersion: 'test' }),
  });
  const port = workloads.wyomingAnnouncement()!.port;
  const metric = (name: string) => workloads.metrics()[`workload.wyoming.${name}`];
  return { port, metric, connect: () => WyomingTestClient.connect(port) };
}

if (!hasEspeak) {
  test.skip('live sessions (espeak-ng not installed: scripts/install-test-deps.sh)', () => {});
} else {
  test('describe is answered with every live session taken; a flow over the limit gets EBUSY and a retry hint, then the close', async (t) => {
    const { connect, metric } = await startAgent(t, 2);
    const holders = [await connect(), await connect()];
    // A streamed synthesis holds its slot from synthesize-start until synthesize-stop.
    for (const h of holders) h.send('synthesize-start');
    await until(() => metric('sessions') === 2, 'two sessions held');
    const c = await connect();
    c.send('describe');
    const info = await c.next('info');
    t.truthy(info.data['tts'], 'info while every slot is taken');
    c.send('synthesize-start');
    await c.closed;
    t.deepEqual(
      c.events.map((e) => e.type),
      ['info', 'error'],
    );
    t.like(c.events[1]!.data, { code: 'EBUSY', retry_after_s: 2 });
    t.regex(
      String(c.events[1]!.data['text']),
      /^Too many concurrent sessions: 2 of 2 are open \(http\.maxSessions\); close one and retry; retry in 2 s$/,
    );
    t.is(metric('refused_sessions'), 1);
    // The flow ends: its slot is free for the next client.
    const first = holders[0]!;
    first.send('synthesize-chunk', { text: 'Hi.' });
    first.send('synthesize-stop');
    await first.next('synthesize-stopped');
    await until(() => metric('sessions') === 1, 'the finished flow gave its slot back');
    const d = await connect();
    d.send('synthesize', { text: 'Yes.' });
    await d.next('audio-stop');
    for (const x of [...holders, d]) x.close();
    await until(() => metric('sessions') === 0 && metric('connections') === 0, 'everything closed');
    t.is(metric('refused_sessions'), 1);
  });

  test('1,000 connections broken in every way: malformed frames, resets, abrupt closes and timeouts; then every slot is free', async (t) => {
    const { connect, metric } = await startAgent(t, 4, { idleTimeoutS: 5 });
    const frames = malformedFrames();
    // Two that take a slot and then fall silent: the idle timeout closes them.
    const silent = [await connect(), await connect()];
    for (const s of silent) s.send('synthesize-start');
    const breakOne = async (i: number) => {
      const c = await connect();
      c.send(i % 2 === 0 ? 'synthesize-start' : 'transcribe');
      const way = i % 4;
      if (way < 2) await c.write(frames[i % frames.length]!.bytes);
      if (way === 2) c.socket.resetAndDestroy();
      else if (way === 3) c.socket.destroy();
      else c.socket.end();
      await c.closed;
    };
    for (let batch = 0; batch < 1000; batch += 20)
      await Promise.all(Array.from({ length: 20 }, (_, k) => breakOne(batch + k)));
    for (const s of silent) await s.closed;
    t.like(silent[0]!.events.at(-1)?.data, { code: 'ETIMEDOUT' });
    await until(() => metric('sessions') === 0 && metric('connections') === 0, 'every slot free');
    // All four slots can be taken at once again.
    const four = await Promise.all(Array.from({ length: 4 }, () => connect()));
    for (const c of four) c.send('synthesize-start');
    await until(() => metric('sessions') === 4, 'four sessions taken');
    t.false(four.some((c) => c.events.some((e) => e.type === 'error')));
    for (const c of four) c.socket.destroy();
    await until(() => metric('sessions') === 0, 'released again');
  });
}

test('20, then 100 concurrent describes: every one answered (latency median and max in the log)', async (t) => {
  const { connect, metric } = await startAgent(t, 4, { maxConnections: 128 });
  for (const n of [20, 100]) {
    const clients = await Promise.all(Array.from({ length: n }, () => connect()));
    const t0 = performance.now();
    const ms = await Promise.all(
      clients.map(async (c) => {
        c.send('describe');
        await c.next('info');
        return performance.now() - t0;
      }),
    );
    ms.sort((a, b) => a - b);
    t.log(
      `${n} concurrent describes: ${n} answered, latency median ${ms[Math.floor(n / 2)]!.toFixed(1)} ms, ` +
        `max ${ms.at(-1)!.toFixed(1)} ms`,
    );
    t.is(ms.length, n);
    for (const c of clients) c.socket.destroy();
    await until(() => metric('connections') === 0, 'all closed');
  }
  t.is(metric('refused_connections'), 0);
});

test('a burst of 200, then 400 connections at the default wyoming.maxConnections (32): every client is answered `info` or ECONNLIMIT with a retry hint before the close, none closed silently, each refusal counted', async (t) => {
  const { connect, metric } = await startAgent(t, 4);
  let refusedBefore = 0;
  // 400 passes the refusals that wait for their client (256 at once): the rest are closed right after the event.
  for (const n of [200, 400]) {
    const clients = await Promise.all(Array.from({ length: n }, () => connect()));
    await Promise.all(
      clients.map(async (c) => {
        c.send('describe');
        // An accepted connection stays open after `info`; a refused one is closed after its event.
        await Promise.race([c.closed, c.next('info').catch(() => undefined)]);
      }),
    );
    const answered = clients.filter((c) => c.events.some((e) => e.type === 'info'));
    const refused = clients.filter(
      (c) =>
        c.events.length === 1 &&
        c.events[0]!.type === 'error' &&
        c.events[0]!.data['code'] === 'ECONNLIMIT' &&
        c.events[0]!.data['retry_after_s'] === 5,
    );
    const silent = clients.filter((c) => c.events.length === 0);
    t.log(
      `${n} at once: ${answered.length} answered info, ${refused.length} refused with ECONNLIMIT, ${silent.length} closed silently`,
    );
    t.is(answered.length, 32);
    t.is(refused.length, n - 32);
    t.is(silent.length, 0);
    await Promise.all(refused.map((c) => c.closed));
    t.is(metric('refused_connections'), refusedBefore + n - 32);
    t.is(metric('dropped_connections'), 0);
    refusedBefore += n - 32;
    for (const c of answered) c.socket.destroy();
    await until(() => metric('connections') === 0, 'all closed');
  }
});
