import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { createAgent } from '../../agent/main.js';
import { registerClipRoutes } from '../../agent/workloads/wake/clip-routes.js';
import { WakeClipStore } from '../../agent/workloads/wake/clips.js';
import { keywordSettings } from '../../agent/workloads/wake/model.js';
import { WakeMonitor, type WakeMonitorEvent } from '../../agent/workloads/wake/monitor.js';
import { WAKE_RECENT_FRAMES, WAKE_WARMUP_FRAMES, WakeStream } from '../../agent/workloads/wake/stream.js';
import { parseWav } from '../../lib/audio/wav.js';
import { createMemoryLogger } from '../../lib/log.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { fakeWakeModel, join, tone } from './wake-fakes.js';

// Detection clips (voice.wake.clips): the store on a real directory (bounded by count and bytes, labels, a write
// that fails), the monitor saving each detection's last 2 s, and the routes the Voice page uses.

const CLIP_BYTES = 44 + WAKE_RECENT_FRAMES * 1280 * 2;

function dir(t: ExecutionContext): string {
  const d = mkdtempSync(joinPath(tmpdir(), 'mnn-edge-clips-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const detection = (seq: number, keyword = 'hey_edge') => ({
  seq,
  t: 1_700_000_000_000 + seq * 80,
  keyword,
  score: 0.5 + seq / 1000,
  source: 'board',
});
const twoSeconds = () => tone(2000, 0.3);

test('clip store: newest first, a 16 kHz WAV each; the oldest go past maxCount or maxBytes', (t) => {
  const store = new WakeClipStore(dir(t), { maxCount: 3, maxBytes: 10 * CLIP_BYTES });
  for (const seq of [1, 2, 3, 4]) store.save(detection(seq), twoSeconds());
  t.deepEqual(
    store.list().map((c) => c.id),
    ['1700000000320-4-hey_edge', '1700000000240-3-hey_edge', '1700000000160-2-hey_edge'],
  );
  const clip = store.list()[0]!;
  t.like(clip, { keyword: 'hey_edge', score: 0.504, source: 'board', bytes: 64044, durationMs: 2000 });
  const wav = parseWav(store.wav(clip.id));
  t.is(wav.sampleRate, 16000);
  t.is(wav.channels.length, 1);

  const small = new WakeClipStore(dir(t), { maxCount: 100, maxBytes: 2 * CLIP_BYTES + 100 });
  for (const seq of [1, 2, 3]) small.save(detection(seq), twoSeconds());
  t.deepEqual(
    small.list().map((c) => c.id.split('-')[1]),
    ['3', '2'],
    'bytes bound the store too',
  );
});

test('clip store: a label marks a false trigger and can be cleared; removal; ids are checked', (t) => {
  const store = new WakeClipStore(dir(t), { maxCount: 10, maxBytes: 1 << 20 });
  const clip = store.save(detection(7, 'hey/../edge'), twoSeconds())!;
  t.is(clip.id, '1700000000560-7-hey_.._edge', 'a keyword name is made file-safe');
  t.is(store.mark(clip.id, 'false-trigger').label, 'false-trigger');
  t.is(store.list()[0]!.label, 'false-trigger', 'kept in its sidecar');
  t.is(store.mark(clip.id, null).label, undefined);
  t.throws(() => store.wav('../../etc/passwd'), { message: 'Not a clip id: "../../etc/passwd"' });
  store.remove(clip.id);
  t.throws(() => store.mark(clip.id, 'correct'), { message: /^No wake clip 1700000000560-7-hey_\.\._edge/ });
  t.deepEqual(readdirSync(store.dir), []);
});

test('clip store: a write that fails is reported, never thrown; a WAV left without its sidecar is removed', (t) => {
  const d = dir(t);
  writeFileSync(joinPath(d, '1-1-cut_short.wav'), 'RIFF');
  const store = new WakeClipStore(d, { maxCount: 10, maxBytes: 1 << 20 });
  t.false(existsSync(joinPath(d, '1-1-cut_short.wav')));
  rmSync(d, { recursive: true });
  t.is(store.save(detection(1), twoSeconds()), undefined);
  t.regex(store.lastError ?? '', /^The clip of the hey_edge detection was not saved: ENOENT/);
});

test('monitor: each detection saves the last 2 s of its stream, ending with the frame that detected', async (t) => {
  const store = new WakeClipStore(dir(t), { maxCount: 10, maxBytes: 1 << 20 });
  const monitor = new WakeMonitor({ nowMs: () => 1000, clips: store });
  const events: WakeMonitorEvent['type'][] = [];
  monitor.subscribe((e) => events.push(e.type));
  const keywords = keywordSettings([{ name: 'hey_edge' }], {});
  const stream = new WakeStream(fakeWakeModel(), keywords);
  monitor.attach(stream, 'wyoming', keywords);
  await stream.push(join(tone(80 * (WAKE_WARMUP_FRAMES + 30), 0.01), tone(80, 0.4)));
  const [clip] = store.list();
  t.like(clip, { keyword: 'hey_edge', source: 'wyoming', t: 1000, durationMs: 2000 });
  t.true(events.indexOf('clips') > events.indexOf('detection'));
  const audio = parseWav(store.wav(clip!.id)).channels;
  t.true(Math.max(...audio[0]!.subarray(-1280).map(Math.abs)) > 0.3, 'the loud frame is at its end');
  t.true(Math.max(...audio[0]!.subarray(0, 1280).map(Math.abs)) < 0.02);
});

test('routes: off says how to turn it on; list, audio, label, removal; bad input named', async (t) => {
  const { dataDir, config } = loopbackAgentConfig('mnn-edge-clip-routes-');
  const store = new WakeClipStore(dir(t), { maxCount: 5, maxBytes: 1 << 20 });
  store.save(detection(1), twoSeconds());
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    modules: [
      {
        name: 'clip-routes',
        start(ctx) {
          registerClipRoutes(ctx.router, store);
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
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${agent.http.port}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const list = (await (await call('GET', '/api/voice/wake/clips')).json()) as {
    enabled: boolean;
    maxCount: number;
    bytes: number;
    clips: Array<{ id: string }>;
  };
  t.like(list, { enabled: true, maxCount: 5, bytes: 64044 });
  const id = list.clips[0]!.id;
  const audio = await call('GET', `/api/voice/wake/clips/${id}/audio`);
  t.is(audio.headers.get('content-type'), 'audio/wav');
  t.is(parseWav(new Uint8Array(await audio.arrayBuffer())).sampleRate, 16000);
  t.like(await (await call('PUT', `/api/voice/wake/clips/${id}`, { label: 'false-trigger' })).json(), {
    id,
    label: 'false-trigger',
  });
  const bad = await call('PUT', `/api/voice/wake/clips/${id}`, { label: 'maybe' });
  t.is(bad.status, 400);
  t.regex(
    ((await bad.json()) as { error: { message: string } }).error.message,
    /Expected \{"label": "false-trigger" \| "correct" \| null\}, got \{"label":"maybe"\}/,
  );
  t.is((await call('DELETE', `/api/voice/wake/clips/${id}`)).status, 200);
  t.is((await call('GET', `/api/voice/wake/clips/${id}/audio`)).status, 404);
});

test('routes: with clips off the list says why and the rest answer 409', async (t) => {
  const { dataDir, config } = loopbackAgentConfig('mnn-edge-clip-off-');
  const agent = createAgent(config, {
    logger: createMemoryLogger(),
    modules: [{ name: 'clip-routes', start: (ctx) => void registerClipRoutes(ctx.router, undefined) }],
  });
  await agent.start();
  t.teardown(async () => {
    await agent.stop('test');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const token = readFileSync(joinPath(dataDir, 'pairing-token'), 'utf8').trim();
  const base = `http://127.0.0.1:${agent.http.port}/api/voice/wake/clips`;
  const auth = { Authorization: `Bearer ${token}` };
  const off = (await (await fetch(base, { headers: auth })).json()) as { enabled: boolean; reason: string };
  t.false(off.enabled);
  t.regex(off.reason, /set voice\.wake\.clips\.enabled/);
  t.is((await fetch(`${base}/1-1-x/audio`, { headers: auth })).status, 409);
});
