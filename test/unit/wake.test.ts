import test from 'ava';
import { WakeGate } from '../../agent/workloads/wake/gate.js';
import { keywordSettings } from '../../agent/workloads/wake/model.js';
import { WAKE_WARMUP_FRAMES, WakeStream } from '../../agent/workloads/wake/stream.js';
import { KeywordTrigger } from '../../engine/index.js';
import { FAKE_KEYWORDS, FakeSession, fakeWakeModel, join, tone } from './wake-fakes.js';

test('trigger: N frames over the threshold make one detection, then nothing for the refractory period', (t) => {
  const tr = new KeywordTrigger({ threshold: 0.5, triggerFrames: 2, refractoryMs: 500 });
  const fired = [0.6, 0.4, 0.6, 0.7, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9].map((s, i) =>
    tr.push(s, i * 80),
  );
  // frames 2+3 make the first; frames 4..9 fall inside 500 ms of it (240..720 ms); 10 and 11 make the next.
  t.deepEqual(
    fired.flatMap((f, i) => (f ? [i] : [])),
    [3, 11],
  );
  tr.reset();
  t.false(tr.push(0.9, 900));
  t.true(tr.push(0.9, 980));
});

const quiet = () => tone(80 * (WAKE_WARMUP_FRAMES + 2), 0.01);

test('wake stream: frames do not depend on chunking; warm-up frames never detect; state travels with each frame', async (t) => {
  const audio = join(tone(80 * 4, 0.4), quiet(), tone(160, 0.4), tone(800, 0.01));
  const run = async (chunk: number) => {
    const model = fakeWakeModel();
    const s = new WakeStream(model, FAKE_KEYWORDS);
    const frames = [];
    for (let at = 0; at < audio.length; at += chunk)
      frames.push(...(await s.push(audio.subarray(at, at + chunk))));
    return { frames, model };
  };
  const a = await run(1280);
  const b = await run(333);
  t.deepEqual(
    a.frames.map((f) => [f.endSample, f.scores['hey_edge']]),
    b.frames.map((f) => [f.endSample, f.scores['hey_edge']]),
  );
  const detections = a.frames.flatMap((f) => f.detections);
  // The loud start falls in the warm-up; the loud burst after it is the one detection, of hey_edge only.
  t.is(detections.length, 1);
  t.is(detections[0]!.keyword, 'hey_edge');
  t.is(detections[0]!.endSample, 1280 * (4 + WAKE_WARMUP_FRAMES + 2 + 1));
  t.is(a.model.stateLengths[0], 0, 'a fresh stream sends empty state');
  t.is(a.model.stateLengths[1], 480);
});

test('wake stream: a model failure rejects, and the stream starts afresh (warm-up again)', async (t) => {
  const model = fakeWakeModel();
  const s = new WakeStream(model, FAKE_KEYWORDS);
  await s.push(quiet());
  model.failWith = new Error('host died');
  await t.throwsAsync(s.push(tone(80, 0.4)), { message: 'host died' });
  model.failWith = undefined;
  const frames = await s.push(tone(80, 0.4));
  t.is(frames[0]!.scores['hey_edge'], 0, 'warm-up after the reset');
  t.is(model.stateLengths.at(-1), 0);
});

test('keyword settings: configuration over the package default over the built-in rule', (t) => {
  const k = keywordSettings(
    [
      { name: 'a', threshold: 0.7, refractoryMs: 3000 },
      { name: 'b', phrase: 'hey b' },
    ],
    { a: { threshold: 0.4 }, b: { enabled: false, triggerFrames: 3 } },
  );
  t.like(k[0], { name: 'a', index: 0, threshold: 0.4, triggerFrames: 1, refractoryMs: 3000, enabled: true });
  t.like(k[1], { name: 'b', index: 1, phrase: 'hey b', threshold: 0.5, triggerFrames: 3, enabled: false });
});

function gate(
  options: { followUpMs?: number; listenTimeoutMs?: number; wakes?: (k: string) => boolean } = {},
) {
  const session = new FakeSession();
  const model = fakeWakeModel();
  const g = new WakeGate(session, {
    listenTimeoutMs: options.listenTimeoutMs ?? 1000,
    followUpMs: options.followUpMs ?? 0,
    preRollMs: 400,
    retryMs: 400,
    stream: () => new WakeStream(model, FAKE_KEYWORDS),
    ...(options.wakes ? { wakes: options.wakes } : {}),
  });
  const events: string[] = [];
  g.on('wake', (e) => events.push(`wake ${e.keyword}`));
  g.on('state', (e) => events.push(`${e.state}: ${e.reason}`));
  g.on('listen-timeout', () => events.push('listen-timeout'));
  g.on('wake-error', (e) => events.push(`wake-error ${e.message}`));
  g.on('wake-recovered', () => events.push('wake-recovered'));
  const feed = async (audio: Float32Array, chunk = 640) => {
    for (let at = 0; at < audio.length; at += chunk) await g.push(audio.subarray(at, at + chunk));
  };
  return { g, session, model, events, feed };
}

test('gate: idle audio never reaches the session; a wake word hands over the pre-roll and what follows', async (t) => {
  const { g, session, events, feed } = gate();
  // Marker samples just before the keyword must not reach the session: 1 s before it, beyond the 400 ms pre-roll.
  await feed(join(quiet(), tone(1000, 0.02)));
  t.is(session.pushed.length, 0);
  await feed(join(tone(160, 0.4), tone(200, 0.01)));
  t.deepEqual(events, ['wake hey_edge', 'listening: wake word hey_edge']);
  t.is(g.state, 'listening');
  const heard = session.samples;
  // 400 ms of pre-roll up to the detecting frame, then everything after it.
  const loud = heard.findIndex((v) => Math.abs(v) > 0.3);
  t.true(loud > 0 && loud <= 400 * 16, `the keyword is inside the pre-roll (at ${loud})`);
  t.true(heard.length < (400 + 200 + 160) * 16 + 1280);
});

test('gate: no speech within listenTimeoutMs → idle, an event, the partial input discarded', async (t) => {
  const { g, session, events, feed } = gate({ listenTimeoutMs: 500 });
  await feed(join(quiet(), tone(160, 0.4)));
  t.is(g.state, 'listening');
  await feed(tone(700, 0.01));
  t.is(g.state, 'idle');
  t.true(events.includes('listen-timeout'));
  t.is(session.discards, 1);
  const n = session.pushed.length;
  await feed(tone(500, 0.01));
  t.is(session.pushed.length, n, 'idle again: nothing more reaches the session');
});

test('gate: speech → turn → idle; with a follow-up window it listens again without the wake word', async (t) => {
  for (const followUpMs of [0, 2000]) {
    const { g, session, feed } = gate({ followUpMs });
    await feed(join(quiet(), tone(160, 0.4)));
    session.emit('speech-start', { atMs: 0 });
    await feed(tone(2000, 0.01));
    t.is(g.state, 'listening', 'speech heard: no timeout');
    session.emit('speech-end', { turn: 1 });
    t.is(g.state, 'turn');
    session.emit('turn-end', { turn: 1 });
    t.is(g.state, followUpMs > 0 ? 'listening' : 'idle');
  }
});

test('gate: a keyword switched off is scored but does not wake', async (t) => {
  const { g, feed } = gate({ wakes: (k) => k !== 'hey_edge' });
  let frames = 0;
  g.on('scores', () => frames++);
  await feed(join(quiet(), tone(160, 0.4)));
  t.is(g.state, 'idle');
  t.true(frames > WAKE_WARMUP_FRAMES);
});

test('gate: the wake model failing → reported once, idle, never listening; back when it recovers', async (t) => {
  const { g, session, model, events, feed } = gate();
  await feed(join(quiet(), tone(160, 0.4)));
  t.is(g.state, 'listening');
  model.failWith = new Error('engine host exited (signal SIGKILL)');
  await feed(tone(1000, 0.4));
  t.is(g.state, 'idle');
  t.is(events.filter((e) => e.startsWith('wake-error')).length, 1, events.join(' | '));
  const n = session.pushed.length;
  await feed(tone(1000, 0.4));
  t.is(session.pushed.length, n, 'loud audio while the model is down never reaches the session');
  model.failWith = undefined;
  await feed(join(quiet(), tone(160, 0.4)));
  t.true(events.includes('wake-recovered'));
  t.is(g.state, 'listening');
});
