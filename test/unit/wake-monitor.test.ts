import { readFileSync, rmSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import test from 'ava';
import WebSocket from 'ws';
import { createSessionLimiter } from '../../agent/http/session-limits.js';
import { createAgent } from '../../agent/main.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import { createWakeGate } from '../../agent/workloads/wake/loop.js';
import { keywordSettings, type ResolvedKeyword } from '../../agent/workloads/wake/model.js';
import { WakeMonitor, type WakeMonitorEvent } from '../../agent/workloads/wake/monitor.js';
import { registerWakeRoutes, WAKE_WS_PATH } from '../../agent/workloads/wake/routes.js';
import { WAKE_WARMUP_FRAMES, WakeStream } from '../../agent/workloads/wake/stream.js';
import { createMemoryLogger } from '../../lib/log.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { until } from '../helpers/until.js';
import { FakeSession, fakeWakeModel, join, tone } from './wake-fakes.js';

// What the Voice page's wake chart is fed: the monitor (frames, detections, rules, bounded), a settings change
// reaching running streams at once, and the agent's GET /api/voice/wake and /ws/voice/wake over loopback.

const quiet = () => tone(80 * (WAKE_WARMUP_FRAMES + 2), 0.01);
const PACKAGE = [{ name: 'hey_edge', phrase: 'hey edge' }, { name: 'hey_other' }];
const resolved = (config: Parameters<typeof keywordSettings>[1] = {}): ResolvedKeyword[] =>
  keywordSettings(PACKAGE, { hey_edge: { triggerFrames: 1 }, hey_other: { triggerFrames: 1 }, ...config });

function watched(monitor: WakeMonitor, source = 'board', keywords = resolved()) {
  const stream = new WakeStream(fakeWakeModel(), keywords);
  monitor.attach(stream, source, keywords);
  return stream;
}

test('monitor: every scored frame and detection with its source, in order, the recent ones kept (bounded)', async (t) => {
  let now = 1000;
  const monitor = new WakeMonitor({ nowMs: () => now++, maxFrames: 10, maxDetections: 2 });
  const events: WakeMonitorEvent[] = [];
  const off = monitor.subscribe((e) => events.push(e));
  const board = watched(monitor, 'board');
  await board.push(join(quiet(), tone(160, 0.4)));
  const wyoming = watched(monitor, 'wyoming');
  await wyoming.push(join(quiet(), tone(160, 0.4)));
  const frames = events.filter((e) => e.type === 'frame');
  t.is(frames.length, 2 * (WAKE_WARMUP_FRAMES + 2) + 4);
  t.deepEqual(
    frames.map((e) => e.frame.seq),
    frames.map((_, i) => i + 1),
  );
  const detections = events.flatMap((e) => (e.type === 'detection' ? [e.detection] : []));
  t.deepEqual(
    detections.map((d) => `${d.source} ${d.keyword}`),
    ['board hey_edge', 'wyoming hey_edge'],
    'hey_other scores half of hey_edge: under its threshold',
  );
  t.true(detections[0]!.score >= 0.5);
  t.is(events.filter((e) => e.type === 'keywords').length, 1, 'the same rules twice are one keywords event');
  const snap = monitor.snapshot();
  t.is(snap.frames.length, 10);
  t.is(snap.frames.at(-1)!.seq, frames.length);
  t.is(snap.frames.at(-1)!.source, 'wyoming');
  t.deepEqual(Object.keys(snap.frames[0]!.scores), ['hey_edge', 'hey_other']);
  t.is(snap.detections.length, 2);
  t.like(snap.keywords[0], { name: 'hey_edge', phrase: 'hey edge', threshold: 0.5, enabled: true });
  off();
  await board.push(tone(160, 0.4));
  t.is(events.filter((e) => e.type === 'frame').length, frames.length, 'unsubscribed: nothing more');
});

test('monitor: a threshold changed in the settings reaches a running stream at once, and the chart', async (t) => {
  const monitor = new WakeMonitor({ nowMs: () => 0 });
  const stream = watched(monitor);
  const events: WakeMonitorEvent[] = [];
  monitor.subscribe((e) => events.push(e));
  // A frame at level 0.2 scores 0.4: under the package's 0.5.
  let frames = await stream.push(join(quiet(), tone(160, 0.2)));
  t.is(frames.flatMap((f) => f.detections).length, 0);
  monitor.applyRules(resolved({ hey_edge: { threshold: 0.3, triggerFrames: 1 } }));
  t.deepEqual(
    events.flatMap((e) => (e.type === 'keywords' ? e.keywords.map((k) => `${k.name} ${k.threshold}`) : [])),
    ['hey_edge 0.3', 'hey_other 0.5'],
  );
  frames = await stream.push(join(tone(400, 0.01), tone(160, 0.2)));
  t.deepEqual(
    frames.flatMap((f) => f.detections.map((d) => d.keyword)),
    ['hey_edge'],
    'the same stream detects at the new threshold',
  );
  t.is(stream.keywords[0]!.threshold, 0.3);
});

test('gate: a keyword switched off in the settings stops waking the board without a new stream', async (t) => {
  const monitor = new WakeMonitor({ nowMs: () => 0 });
  const session = new FakeSession();
  const model = fakeWakeModel();
  let keywords = resolved();
  const gate = createWakeGate(session, {
    config: { listenTimeoutMs: 500, followUpMs: 0, preRollMs: 400 } as never,
    wakeStream: () => {
      const stream = new WakeStream(model, keywords);
      monitor.attach(stream, 'board', keywords);
      return { stream, keywords };
    },
  });
  const feed = async (audio: Float32Array) => {
    for (let at = 0; at < audio.length; at += 640) await gate.push(audio.subarray(at, at + 640));
  };
  await feed(quiet());
  keywords = resolved({ hey_edge: { enabled: false, triggerFrames: 1 } });
  monitor.applyRules(keywords);
  await feed(tone(160, 0.4));
  t.is(gate.state, 'idle');
  t.is(monitor.snapshot().detections.length, 1, 'still scored and charted');
  monitor.applyRules(resolved());
  // After hey_edge's refractory period (2 s) from the detection it made while switched off.
  await feed(join(tone(2200, 0.01), tone(160, 0.4)));
  t.is(gate.state, 'listening');
});

function open(url: string, token: string) {
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  return { ws, messages, closed };
}

test('routes: GET /api/voice/wake says why without a model; the socket sends hello with the recent past, then live frames; one live session', async (t) => {
  const monitor = new WakeMonitor({ nowMs: () => Date.now() });
  let keywords: () => ResolvedKeyword[] = () => {
    throw new WorkloadError('ENOMODEL', 'No model placed on slot voice.wake');
  };
  const sessions = createSessionLimiter(1);
  const { dataDir, config } = loopbackAgentConfig('mnn-edge-wake-routes-');
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    modules: [
      {
        name: 'wake-routes',
        start(ctx) {
          registerWakeRoutes({
            router: ctx.router,
            monitor,
            keywords: () => keywords(),
            sessions,
            messagesPerSecond: 50,
            clock: ctx.clock,
          });
        },
      },
    ],
  });
  await agent.start();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const token = readFileSync(joinPath(dataDir, 'pairing-token'), 'utf8').trim();
  const base = `http://127.0.0.1:${agent.http.port}`;
  const get = async () =>
    (await fetch(`${base}/api/voice/wake`, { headers: { Authorization: `Bearer ${token}` } })).json();
  t.deepEqual(await get(), { available: false, reason: 'No model placed on slot voice.wake' });

  keywords = () => resolved();
  const status = (await get()) as { available: boolean; livePath: string; keywords: Array<{ name: string }> };
  t.like(status, { available: true, livePath: WAKE_WS_PATH });
  t.deepEqual(
    status.keywords.map((k) => k.name),
    ['hey_edge', 'hey_other'],
  );
  const stream = watched(monitor);
  await stream.push(quiet());
  const a = open(`ws://127.0.0.1:${agent.http.port}${WAKE_WS_PATH}`, token);
  await until(() => a.messages.length > 0, 'hello');
  const hello = a.messages[0] as { type: string; keywords: Array<{ name: string; threshold: number }> };
  t.is(hello.type, 'hello');
  t.like(hello.keywords[0], { name: 'hey_edge', threshold: 0.5 });
  t.is((a.messages[0]!['frames'] as unknown[]).length, WAKE_WARMUP_FRAMES + 2);

  const b = open(`ws://127.0.0.1:${agent.http.port}${WAKE_WS_PATH}`, token);
  t.is(await b.closed, 4429, 'a second page over the session limit is refused');

  await stream.push(tone(160, 0.4));
  await until(() => a.messages.some((m) => m['type'] === 'detection'), 'a detection');
  t.like(
    a.messages.find((m) => m['type'] === 'frame'),
    { type: 'frame', source: 'board', seq: WAKE_WARMUP_FRAMES + 3 },
  );
  t.like(
    a.messages.find((m) => m['type'] === 'detection'),
    { keyword: 'hey_edge', source: 'board' },
  );
  monitor.applyRules(resolved({ hey_edge: { threshold: 0.7 } }));
  await until(() => a.messages.some((m) => m['type'] === 'keywords'), 'the new rules');
  const changed = a.messages.find((m) => m['type'] === 'keywords') as {
    keywords: Array<{ threshold: number }>;
  };
  t.is(changed.keywords[0]!.threshold, 0.7);
  a.ws.close();
  await a.closed;
  await until(() => sessions.active === 0, 'the live session freed');
});
