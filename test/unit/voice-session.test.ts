import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { EnergyVad } from '../../agent/workloads/audio/vad.js';
import { resolveVoiceConfig } from '../../agent/workloads/config.js';
import type { ChatResult, ChatStream } from '../../agent/workloads/shared/chat-model.js';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { findExecutable } from '../../agent/workloads/voice/executable.js';
import { VoiceService } from '../../agent/workloads/voice/service.js';
import {
  type VoiceEvents,
  VoiceSession,
  type VoiceSessionOptions,
} from '../../agent/workloads/voice/session.js';
import type { AsrStage, PcmChunk, ReplyStage, TtsStage } from '../../agent/workloads/voice/stages.js';
import { VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';
import { systemClock } from '../../lib/clock.js';
import { until } from '../helpers/until.js';
import { FakeWorkloadRuntime } from './workload-fakes.js';

// Test doubles for the model stages: deterministic text and tones, honouring the abort signal like the real ones.
const RATE = 16000;

function tone(ms: number, amplitude: number): Float32Array {
  const n = Math.round((ms * RATE) / 1000);
  return Float32Array.from({ length: n }, (_, i) => amplitude * Math.sin((2 * Math.PI * 220 * i) / RATE));
}
const silence = (ms: number) => new Float32Array(Math.round((ms * RATE) / 1000));

const tick = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

class FakeAsr implements AsrStage {
  readonly family = 'fake';
  calls = 0;
  async transcribe(audio: Float32Array, signal: AbortSignal) {
    await tick(1, signal);
    this.calls++;
    const text = `heard ${audio.length} samples`;
    return {
      text,
      result: {
        text,
        finishReason: 'stop',
        promptTokens: 1,
        generatedTokens: 1,
        prefillMs: 1,
        decodeMs: 1,
      } as ChatResult,
    };
  }
}

class FakeReply implements ReplyStage {
  readonly family = 'fake';
  readonly audioIn = false;
  readonly requests: Array<{ history: string[] }> = [];
  constructor(
    readonly pieces: string[],
    readonly delayMs = 1,
  ) {}
  reply(request: { history: Array<{ role: string; content: string }>; signal: AbortSignal }): ChatStream {
    this.requests.push({ history: request.history.map((m) => `${m.role}:${m.content}`) });
    const { pieces, delayMs } = this;
    let settle!: (r: ChatResult) => void;
    const result = new Promise<ChatResult>((r) => {
      settle = r;
    });
    async function* run() {
      let text = '';
      try {
        for (const p of pieces) {
          await tick(delayMs, request.signal);
          text += p;
          yield p;
        }
      } finally {
        settle({
          text,
          finishReason: request.signal.aborted ? 'aborted' : 'stop',
          promptTokens: 10,
          generatedTokens: pieces.length,
          prefillMs: 2,
          decodeMs: 10,
        });
      }
    }
    const gen = run();
    return { result, [Symbol.asyncIterator]: () => gen };
  }
}

class FakeTts implements TtsStage {
  readonly family = 'fake';
  readonly sentences: string[] = [];
  constructor(
    readonly amplitude: number,
    readonly chunkMs = 100,
  ) {}
  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<PcmChunk> {
    this.sentences.push(text);
    for (let i = 0; i < 2; i++) {
      await tick(1, signal);
      yield { samples: tone(this.chunkMs, this.amplitude), sampleRate: RATE };
    }
  }
}

function session(overrides: Partial<VoiceSessionOptions> = {}) {
  const db = openStore(':memory:');
  const store = new VoiceTurnStore(db, { maxTurns: 100, maxAgeHours: 24 });
  const asr = new FakeAsr();
  const reply = new FakeReply(['Hello', ' there. ', 'How are', ' you?']);
  const tts = new FakeTts(0.1);
  const s = new VoiceSession({
    id: 'test',
    vad: new EnergyVad(),
    asr,
    reply,
    tts,
    systemPrompt: 'Be brief.',
    maxHistoryMessages: 4,
    mode: 'vad',
    duplex: 'full',
    bargeIn: true,
    bargeInMarginDb: 15,
    bargeInMinSpeechMs: 96,
    clock: systemClock,
    sink: store,
    ...overrides,
  });
  const log: Array<{ type: keyof VoiceEvents; turn?: number; status?: string }> = [];
  for (const type of [
    'speech-start',
    'speech-end',
    'transcript',
    'reply-delta',
    'audio',
    'barge-in',
    'turn-end',
  ] as const) {
    s.on(type, (e: VoiceEvents[typeof type]) => {
      const turn = 'turn' in e ? e.turn : undefined;
      const status = 'status' in e ? e.status : undefined;
      log.push({
        type,
        ...(turn !== undefined ? { turn } : {}),
        ...(status !== undefined ? { status } : {}),
      });
    });
  }
  return { s, log, store, asr, reply, tts, db };
}

const first = (log: Array<{ type: string }>, type: string) => log.findIndex((e) => e.type === type);
const last = (log: Array<{ type: string }>, type: string) => log.map((e) => e.type).lastIndexOf(type);

test('one spoken request becomes one turn: events in pipeline order, metrics stored', async (t) => {
  const { s, log, store, tts, reply } = session();
  s.pushAudio(silence(300));
  s.pushAudio(tone(700, 0.3));
  s.pushAudio(silence(800));
  await s.endOfInput();
  await s.idle();
  const types = log.map((e) => e.type);
  t.is(types[0], 'speech-start');
  t.is(types[1], 'speech-end');
  t.is(types[2], 'transcript');
  t.is(types.at(-1), 'turn-end');
  t.true(
    first(log, 'reply-delta') < first(log, 'audio'),
    'speech starts after the first sentence is generated',
  );
  t.true(last(log, 'reply-delta') < last(log, 'audio'));
  t.deepEqual(tts.sentences, ['Hello there.', 'How are you?']);
  t.is(log.filter((e) => e.type === 'audio').length, 4);
  t.deepEqual(reply.requests[0]!.history, [
    'system:Be brief.',
    `user:heard ${reply.requests[0]!.history[1]!.slice(11)}`,
  ]);
  const [turn] = store.recent();
  t.is(turn!.status, 'completed');
  t.is(turn!.reply, 'Hello there. How are you?');
  t.regex(turn!.transcript!, /^heard \d+ samples$/);
  const m = turn!.metrics;
  t.true(m.speechMs > 700 && m.speechMs < 1400, `speech ${m.speechMs} ms`);
  for (const k of ['asrMs', 'ttftMs', 'ttfaMs', 'asrRtf', 'ttsRtf', 'tokensPerSec'] as const) {
    t.true(typeof m[k] === 'number' && m[k]! >= 0, `${k} = ${m[k]}`);
  }
  t.is(m.tokensPerSec, 400);
  t.true(m.ttfaMs! >= m.ttftMs!);
  t.deepEqual(
    s.history.map((h) => h.role),
    ['user', 'assistant'],
  );
  const telemetry = store.metrics();
  t.is(telemetry['workload.voice.turns'], 1);
  t.is(typeof telemetry['workload.voice.ttfa_ms'], 'number');
  t.is(store.metrics()['workload.voice.turns'], 0, 'each turn is counted in one telemetry interval');
  await s.close();
});

test('the TTS stage is told to get ready when speech starts, long before the turn, and let go at close', async (t) => {
  const { s, log, tts, asr } = session();
  const calls: string[] = [];
  Object.assign(tts, {
    prepare: () => calls.push(`prepare (turns so far: ${log.filter((e) => e.type === 'speech-end').length})`),
    dispose: () => calls.push('dispose'),
  });
  s.pushAudio(tone(700, 0.3));
  s.pushAudio(silence(800));
  await s.endOfInput();
  await s.idle();
  t.deepEqual(calls, ['prepare (turns so far: 0)']);
  t.is(log.at(-1)?.status, 'completed');
  t.is(asr.calls, 1);
  await s.close();
  t.deepEqual(calls, ['prepare (turns so far: 0)', 'dispose']);
});

test('barge-in: speech during a reply cancels it before the next turn starts', async (t) => {
  const { s, log, store } = session({
    reply: new FakeReply(
      Array.from({ length: 200 }, (_, i) => `word${i}. `),
      5,
    ),
  });
  s.pushAudio(tone(600, 0.3));
  s.pushAudio(silence(600));
  await new Promise<void>((resolve) => s.once('audio', () => resolve()));
  s.pushAudio(tone(600, 0.3));
  s.pushAudio(silence(600));
  await s.endOfInput();
  await s.idle();
  const bargeIn = log.findIndex((e) => e.type === 'barge-in' && e.turn === 1);
  const end1 = log.findIndex((e) => e.type === 'turn-end' && e.turn === 1);
  const speechEnd2 = log.findIndex((e) => e.type === 'speech-end' && e.turn === 2);
  t.true(
    bargeIn >= 0 && bargeIn < end1 && end1 < speechEnd2,
    JSON.stringify(log.filter((e) => e.type !== 'audio' && e.type !== 'reply-delta')),
  );
  t.is(log[end1]!.status, 'cancelled');
  t.false(
    log.slice(end1).some((e) => (e.type === 'audio' || e.type === 'reply-delta') && e.turn === 1),
    'nothing of the cancelled turn comes out after it ended',
  );
  const turns = store.recent().reverse();
  t.is(turns[0]!.status, 'cancelled');
  t.is(turns[0]!.error, 'barge-in: the user spoke during the reply');
  t.true(typeof turns[0]!.metrics.bargeInMs === 'number');
  t.is(turns[1]!.turn, 2);
  await s.close();
});

test('half duplex ignores input quieter than the playback, and a clearly louder voice still barges in', async (t) => {
  const { s, log } = session({
    duplex: 'half',
    tts: new FakeTts(0.02, 2000),
    reply: new FakeReply(
      Array.from({ length: 100 }, (_, i) => `w${i}. `),
      10,
    ),
  });
  s.pushAudio(tone(600, 0.3));
  s.pushAudio(silence(600));
  await new Promise<void>((resolve) => s.once('audio', () => resolve()));
  t.true(s.playing);
  // Echo-level input: 0.05 amplitude is 5 dB above the 0.02 playback, under the 15 dB margin.
  s.pushAudio(tone(600, 0.05));
  await until(() => s.stats.framesGated > 10, 'echo-level frames gated');
  t.false(log.some((e) => e.type === 'barge-in'));
  s.pushAudio(tone(600, 0.9));
  s.pushAudio(silence(700));
  await s.endOfInput();
  await s.idle();
  t.true(log.some((e) => e.type === 'barge-in' && e.turn === 1));
  t.is(log.find((e) => e.type === 'turn-end' && e.turn === 1)?.status, 'cancelled');
  await s.close();
});

test('push-to-talk: a too-short request fails with a specific error', async (t) => {
  const { s } = session({ mode: 'push-to-talk' });
  const ended = new Promise<VoiceEvents['turn-end']>((resolve) => s.once('turn-end', resolve));
  s.pushToTalkStart();
  s.pushAudio(new Float32Array(100));
  s.pushToTalkEnd();
  const end = await ended;
  t.is(end.status, 'failed');
  t.is(
    end.error,
    'Utterance too short for speech recognition: 100 samples (at least 1600, 100 ms at 16 kHz)',
  );
  t.throws(() => s.pushToTalkEnd(), { message: 'push-to-talk end without a start' });
  await s.close();
  t.throws(() => s.pushAudio(new Float32Array(10)), { message: 'Voice session test is closed' });
});

test('a voice session refuses clearly without the engine, and names the slot that has no model', async (t) => {
  const noEngine = new FakeWorkloadRuntime(
    { 'voice.llm': { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' } },
    'MNN engine not available: the engine addon is not built. Set MNN_ROOT to an MNN install prefix',
  );
  const service = new VoiceService(resolveVoiceConfig({}), {
    models: slotModels(() => noEngine),
    clock: systemClock,
  });
  await t.throwsAsync(service.open('s1'), {
    code: 'ENOENGINE',
    message: 'MNN engine not available: the engine addon is not built. Set MNN_ROOT to an MNN install prefix',
  });
  const runtime = new FakeWorkloadRuntime({});
  const unconfigured = new VoiceService(resolveVoiceConfig({}), {
    models: slotModels(() => runtime),
    clock: systemClock,
  });
  await t.throwsAsync(unconfigured.open('s2'), {
    code: 'ENOMODEL',
    message:
      'No model placed on slot voice.llm: install one (mnn-edge models import <dir>) and set slots.voice.llm',
  });
  runtime.slots['voice.llm'] = { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' };
  await t.throwsAsync(unconfigured.open('s3'), {
    code: 'ENOMODEL',
    message:
      'No model placed on slot voice.asr: install one (mnn-edge models import <dir>) and set slots.voice.asr (or place an omni model on voice.omni, which hears the audio itself)',
  });
  runtime.slots['voice.asr'] = { status: 'unloaded', reasons: ['needs 900 MiB, 400 MiB left in the budget'] };
  await t.throwsAsync(unconfigured.open('s4'), {
    message:
      'Slot voice.asr has no model loaded: needs 900 MiB, 400 MiB left in the budget (or place an omni model on voice.omni, which hears the audio itself)',
  });
  runtime.slots['voice.asr'] = { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' };
  await t.throwsAsync(unconfigured.open('s5'), {
    code: 'ENOMODEL',
    message: 'tiny-llm takes no audio input (is_audio is not set): it cannot be the ASR stage',
  });
  runtime.slots['voice.asr'] = { status: 'placed', modelId: 'tiny-omni', version: '1', kind: 'omni' };
  const s = await unconfigured.open('s6');
  t.deepEqual(unconfigured.describe(), {
    vad: 'energy (built-in)',
    asr: 'voice.asr: tiny-omni@1',
    llm: 'voice.llm: tiny-llm@1',
    tts: 'espeak-ng (en-us)',
  });
  await s.close();
});

test('without espeak-ng and without a speech model, voice says so instead of naming espeak as its output', async (t) => {
  const runtime = new FakeWorkloadRuntime({});
  runtime.slots['voice.llm'] = { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' };
  runtime.slots['voice.asr'] = { status: 'placed', modelId: 'tiny-omni', version: '1', kind: 'omni' };
  const looked: string[] = [];
  const voice = new VoiceService(resolveVoiceConfig({}), {
    models: slotModels(() => runtime),
    clock: systemClock,
    findExecutable: (command) => {
      looked.push(command);
      return undefined;
    },
  });
  const reason =
    'espeak-ng is not installed, and speech output needs it when no speech model is placed: install it (apt install espeak-ng) or place one on slot voice.tts';
  t.is(voice.describe()['tts'], `missing: ${reason}`);
  t.is(voice.missing(), reason);
  await t.throwsAsync(voice.open('s1'), { code: 'ETOOL', message: reason });
  t.true(looked.every((c) => c === 'espeak-ng'));
});

test('turn store keeps transcripts within the retention limits', (t) => {
  const db = openStore(':memory:');
  let now = 1_000_000_000;
  const store = new VoiceTurnStore(db, { maxTurns: 3, maxAgeHours: 1 }, () => now);
  const rec = (turn: number, at: number) =>
    store.record({
      sessionId: 's',
      turn,
      startedAt: at,
      status: 'completed',
      transcript: `t${turn}`,
      reply: 'r',
      metrics: { speechMs: 1000 },
    });
  for (let i = 1; i <= 5; i++) rec(i, now);
  t.deepEqual(
    store.recent().map((r) => r.transcript),
    ['t5', 't4', 't3'],
  );
  now += 2 * 3_600_000;
  rec(6, now);
  t.deepEqual(
    store.recent().map((r) => r.transcript),
    ['t6'],
  );
});

test('barge-in after the reply was generated but while it still plays: playback is told to stop', async (t) => {
  // 2 s of speech per chunk: synthesis ends long before playback would.
  const { s, log } = session({ tts: new FakeTts(0.02, 2000) });
  s.pushAudio(tone(600, 0.3));
  s.pushAudio(silence(700));
  await s.idle();
  t.is(log.filter((e) => e.type === 'turn-end').length, 1);
  t.true(s.playing);
  s.pushAudio(tone(300, 0.3));
  await s.drained();
  t.deepEqual(
    log.filter((e) => e.type === 'barge-in'),
    [{ type: 'barge-in', turn: 1 }],
  );
  t.false(s.playing);
  await s.close();
});

test('findExecutable looks in PATH as a shell does, and takes a name with a slash as a path', (t) => {
  const env = { PATH: `relative/dir:/usr/bin:/bin` };
  t.regex(findExecutable('sh', env) ?? '', /^\/(usr\/)?bin\/sh$/);
  t.is(findExecutable('no-such-tool-mnn-edge', env), undefined);
  t.is(findExecutable('sh', { PATH: '' }), undefined);
  t.is(findExecutable('/bin/sh', { PATH: '' }), '/bin/sh');
  const dir = mkdtempSync(join(tmpdir(), 'find-exe-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'espeak-ng'), '#!/bin/sh\n', { mode: 0o644 });
  t.is(findExecutable('espeak-ng', { PATH: dir }), undefined, 'a file that is not executable');
  chmodSync(join(dir, 'espeak-ng'), 0o755);
  t.is(findExecutable('espeak-ng', { PATH: dir }), join(dir, 'espeak-ng'));
});

test('say: the text is spoken sentence by sentence as a turn of its own, outside the history and the store', async (t) => {
  const { s, log, store, tts, reply, asr } = session();
  s.say('Testing the speaker. One, two.');
  await s.idle();
  t.deepEqual(tts.sentences, ['Testing the speaker.', 'One, two.']);
  t.deepEqual(
    log.map((e) => e.type),
    ['audio', 'audio', 'audio', 'audio', 'turn-end'],
  );
  t.is(log.at(-1)!.status, 'completed');
  t.is(reply.requests.length, 0, 'no LLM');
  t.is(asr.calls, 0, 'no ASR');
  t.deepEqual(s.history, []);
  t.deepEqual(store.recent(), []);
  t.throws(() => s.say('  '), { message: 'say.text is empty' });
  await s.close();
});

test('say is interrupted by speech like a reply, and a new say interrupts the one speaking', async (t) => {
  const { s, log } = session({ tts: new FakeTts(0.1, 2000) });
  s.say('First. Second. Third.');
  await new Promise<void>((resolve) => s.once('audio', () => resolve()));
  s.say('Instead.');
  await s.idle();
  const ends = log.filter((e) => e.type === 'turn-end');
  t.deepEqual(
    ends.map((e) => [e.turn, e.status]),
    [
      [1, 'cancelled'],
      [2, 'completed'],
    ],
  );
  t.true(log.some((e) => e.type === 'barge-in' && e.turn === 1));
  await s.close();
});
