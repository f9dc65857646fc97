// One Wyoming connection's event flows with stand-in stages (unit test doubles): a talker-like TTS at 24 kHz
// streamed chunk by chunk, ASR input in an unusual format, cancellation by a new transcribe and by closing, and
// the protocol-state errors. The real stages on a running agent are in test/integration/wyoming.test.ts.

import test from 'ava';
import type { ChatResult, ChatStream } from '../../agent/workloads/shared/chat-model.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import type { VoiceRoles, VoiceService } from '../../agent/workloads/voice/service.js';
import type { AsrStage, PcmChunk, ReplyStage, TtsStage } from '../../agent/workloads/voice/stages.js';
import { WakeStream } from '../../agent/workloads/wake/stream.js';
import type { WyomingEvent } from '../../agent/workloads/wyoming/codec.js';
import { WyomingConnection } from '../../agent/workloads/wyoming/connection.js';
import { ConversationHistories } from '../../agent/workloads/wyoming/conversations.js';
import { createMemoryLogger } from '../../lib/log.js';
import { FAKE_KEYWORDS, fakeWakeModel, join, tone } from './wake-fakes.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

function stream(pieces: string[], signal: AbortSignal, delayMs = 0): ChatStream {
  let settle!: (r: ChatResult) => void;
  const result = new Promise<ChatResult>((r) => {
    settle = r;
  });
  async function* run() {
    let n = 0;
    try {
      for (const p of pieces) {
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
        signal.throwIfAborted();
        n++;
        yield p;
      }
    } finally {
      settle({
        text: pieces.join(''),
        finishReason: signal.aborted ? 'aborted' : 'stop',
        promptTokens: 1,
        generatedTokens: n,
        prefillMs: 0,
        decodeMs: 0,
      });
    }
  }
  const gen = run();
  return { result, [Symbol.asyncIterator]: () => gen };
}

function setup(options: { noAsr?: boolean; replyDelayMs?: number; wake?: VoiceService['wakeStream'] } = {}) {
  const log: string[] = [];
  const sent: WyomingEvent[] = [];
  const heard: Float32Array[] = [];
  const signals: AbortSignal[] = [];
  const tts: TtsStage = {
    family: 'stand-in talker',
    async *synthesize(text: string, signal: AbortSignal): AsyncIterable<PcmChunk> {
      signals.push(signal);
      for (let i = 0; i < 3; i++) {
        await tick();
        signal.throwIfAborted();
        log.push(`made ${text} ${i}`);
        yield { samples: new Float32Array(240).fill(0.25), sampleRate: 24000 };
      }
    },
  };
  const asr: AsrStage = {
    family: 'stand-in',
    async transcribe(audio, signal, onText) {
      heard.push(audio);
      signals.push(signal);
      // Two pieces in one tick (one batch from the engine), then one more later.
      onText?.('hello ');
      onText?.('wor');
      await new Promise((r) => setTimeout(r, 5));
      onText?.('ld');
      const result: ChatResult = {
        text: 'hello world',
        finishReason: 'stop',
        promptTokens: 1,
        generatedTokens: 2,
        prefillMs: 0,
        decodeMs: 0,
      };
      return { text: 'hello world', result };
    },
  };
  const reply: ReplyStage = {
    family: 'stand-in',
    audioIn: false,
    reply: (r) => {
      signals.push(r.signal);
      return stream(['It ', 'is ', 'sunny.'], r.signal, options.replyDelayMs ?? 0);
    },
  };
  const roles: VoiceRoles = {
    tts: { kind: 'talker', slot: 'voice.tts', modelId: 'talker', version: '1' },
    reply: { slot: 'voice.llm', modelId: 'llm', version: '1' },
    ...(options.noAsr ? {} : { asr: { slot: 'voice.asr', modelId: 'asr', version: '1' } }),
  };
  const connection = new WyomingConnection({
    voice: {
      roles: () => roles,
      asrStage: () => {
        if (options.noAsr) throw new WorkloadError('ENOMODEL', 'No model placed on slot voice.asr: fake');
        return asr;
      },
      replyStage: () => reply,
      ttsStage: () => tts,
      wakeStream:
        options.wake ??
        (() => {
          throw new WorkloadError('ENOMODEL', 'No model placed on slot voice.wake: fake');
        }),
    },
    conversations: new ConversationHistories(4, 8),
    systemPrompt: 'Be brief.',
    languages: ['en'],
    agentVersion: 'test',
    maxTextChars: 100,
    maxAudioSeconds: 5,
    asr: { instruction: 'Transcribe.', maxNewTokens: 8 },
    send: async (e) => {
      if (e.type === 'audio-chunk') log.push('sent chunk');
      sent.push(e);
    },
    logger: createMemoryLogger(),
  });
  const ev = (type: string, data: Record<string, unknown> = {}, payload?: Buffer) =>
    connection.handle({ type, data, ...(payload ? { payload } : {}) });
  return { connection, ev, sent, log, heard, signals };
}

test('synthesize through a talker-like stage: 24 kHz s16le chunks sent as they are made', async (t) => {
  const { connection, ev, sent, log } = setup();
  ev('synthesize', { text: 'Hi there.' });
  await connection.idle();
  t.deepEqual(
    sent.map((e) => e.type),
    ['audio-start', 'audio-chunk', 'audio-chunk', 'audio-chunk', 'audio-stop'],
  );
  t.deepEqual(sent[0]!.data, { rate: 24000, width: 2, channels: 1 });
  t.true(sent.filter((e) => e.type === 'audio-chunk').every((e) => e.payload!.length === 480));
  t.is(sent[1]!.payload!.readInt16LE(0), Math.round(0.25 * 32767));
  // Streamed: the first chunk went out before the stage made the second.
  t.deepEqual(log.slice(0, 3), ['made Hi there. 0', 'sent chunk', 'made Hi there. 1']);
});

test('streamed synthesize: one audio group per sentence, the compatibility synthesize ignored', async (t) => {
  const { connection, ev, sent } = setup();
  ev('synthesize-start');
  ev('synthesize-chunk', { text: 'One. Tw' });
  ev('synthesize-chunk', { text: 'o' });
  ev('synthesize', { text: 'One. Two' });
  ev('synthesize-stop');
  await connection.idle();
  const types = sent.map((e) => e.type);
  t.is(types.filter((x) => x === 'audio-start').length, 2);
  t.is(types.at(-1), 'synthesize-stopped');
  t.false(types.includes('error'));
});

test('ASR: 44.1 kHz stereo 32-bit chunks arrive as 16 kHz mono; the transcript is streamed (a chunk per batch) then whole', async (t) => {
  const { connection, ev, sent, heard } = setup();
  const format = { rate: 44100, width: 4, channels: 2 };
  ev('transcribe', { language: 'en' });
  ev('audio-start', format);
  for (let i = 0; i < 10; i++) ev('audio-chunk', format, Buffer.alloc(441 * 8)); // 10 ms each
  ev('audio-stop');
  await connection.idle();
  t.is(heard[0]!.length, 1600);
  t.deepEqual(
    sent.map((e) => [e.type, e.data['text']]),
    [
      ['transcript-start', undefined],
      ['transcript-chunk', 'hello wor'],
      ['transcript-chunk', 'ld'],
      ['transcript', 'hello world'],
      ['transcript-stop', undefined],
    ],
  );
});

test('a new transcribe cancels the running conversation; closing cancels everything', async (t) => {
  const { connection, ev, sent, signals } = setup({ replyDelayMs: 20 });
  ev('transcript', { text: 'Weather?' });
  await new Promise((r) => setTimeout(r, 30));
  ev('transcribe');
  await connection.idle();
  t.true(signals[0]!.aborted);
  t.false(sent.some((e) => e.type === 'handled' || e.type === 'error'));
  ev('synthesize', { text: 'Long text.' });
  await tick();
  connection.close();
  await connection.idle();
  t.true(signals.at(-1)!.aborted);
  t.false(sent.some((e) => e.type === 'audio-stop'));
});

test('the conversation keeps history per conversation id and answers in handled chunks', async (t) => {
  const { connection, ev, sent } = setup();
  ev('transcript', { text: 'Weather?', context: { conversation_id: 'c1' } });
  await connection.idle();
  t.deepEqual(
    sent.map((e) => e.type),
    ['handled-start', 'handled-chunk', 'handled-chunk', 'handled-chunk', 'handled', 'handled-stop'],
  );
  t.deepEqual(sent[4]!.data, { text: 'It is sunny.', context: { conversation_id: 'c1' } });
});

test('protocol-state and input errors are error events with codes; the connection goes on', async (t) => {
  const { connection, ev, sent } = setup({ noAsr: true });
  ev('audio-chunk', { rate: 16000, width: 2, channels: 1 }, Buffer.alloc(4));
  ev('synthesize-chunk', { text: 'x' });
  ev('synthesize', { text: 42 });
  ev('synthesize', { text: 'x'.repeat(101) });
  ev('transcribe');
  ev('audio-start', { rate: 16000, width: 2, channels: 1 });
  ev('audio-chunk', { rate: 16000, width: 2, channels: 1 }, Buffer.alloc(4));
  ev('audio-stop');
  ev('audio-start', { rate: 16000, width: 7, channels: 1 });
  ev('describe');
  await connection.idle();
  await tick();
  t.deepEqual(
    sent.map((e) => [e.type, e.data['code']]),
    [
      ['error', 'ESTATE'],
      ['error', 'ESTATE'],
      ['error', 'EFRAME'],
      ['error', 'ETOOLARGE'],
      ['error', 'ENOMODEL'],
      ['error', 'ENOMODEL'],
      ['info', undefined],
    ],
  );
  t.is(sent[0]!.data['text'], 'audio-chunk before audio-start');
  t.deepEqual(Object.keys(sent.at(-1)!.data), ['tts', 'handle']);
});

test('more than 32 waiting requests are refused with EBUSY', async (t) => {
  const { connection, ev, sent } = setup({ replyDelayMs: 5 });
  for (let i = 0; i < 34; i++) ev('transcript', { text: `q${i}` });
  await tick();
  t.true(sent.some((e) => e.type === 'error' && e.data['code'] === 'EBUSY'));
  connection.close();
  await connection.idle();
});

/** s16le stereo at 22.05 kHz of a 16 kHz mono signal (nearest sample), so the wake path must convert it. */
function stereo22k(mono16k: Float32Array): Buffer {
  const n = Math.floor((mono16k.length * 22050) / 16000);
  const out = Buffer.alloc(n * 4);
  for (let i = 0; i < n; i++) {
    const v = Math.round((mono16k[Math.floor((i * 16000) / 22050)] ?? 0) * 32767);
    out.writeInt16LE(v, i * 4);
    out.writeInt16LE(v, i * 4 + 2);
  }
  return out;
}

function wakeSetup() {
  const model = fakeWakeModel();
  const s = setup({
    wake: () => ({
      stream: new WakeStream(model, FAKE_KEYWORDS),
      keywords: FAKE_KEYWORDS.map((k) => ({ ...k, enabled: true })),
    }),
  });
  const sendAudio = (audio: Float32Array, chunkMs = 100) => {
    const bytes = stereo22k(audio);
    const step = Math.round((chunkMs / 1000) * 22050) * 4;
    s.ev('audio-start', { rate: 22050, width: 2, channels: 2 });
    for (let at = 0; at < bytes.length; at += step)
      s.ev('audio-chunk', { rate: 22050, width: 2, channels: 2 }, bytes.subarray(at, at + step));
    s.ev('audio-stop');
  };
  return { ...s, model, sendAudio };
}

test('wake: detect + 22.05 kHz stereo audio → detection of the named wake word; silence → not-detected', async (t) => {
  const { ev, sent, sendAudio, connection } = wakeSetup();
  ev('detect', { names: ['hey_edge'] });
  sendAudio(join(tone(1300, 0.01), tone(200, 0.4), tone(500, 0.01)));
  await connection.idle();
  const detections = sent.filter((e) => e.type === 'detection');
  t.is(detections.length, 1);
  t.is(detections[0]!.data['name'], 'hey_edge');
  t.true(typeof detections[0]!.data['timestamp'] === 'number');
  t.false(sent.some((e) => e.type === 'not-detected'));
  t.false(
    sent.some((e) => e.type.startsWith('transcript')),
    'the wake audio is not transcribed',
  );

  sent.length = 0;
  ev('detect', {});
  sendAudio(tone(2000, 0.01));
  await connection.idle();
  t.deepEqual(
    sent.map((e) => e.type),
    ['not-detected'],
  );
});

test('wake: names it does not have, no wake model, or a model failing mid-stream answer error events', async (t) => {
  const { ev, sent, model, sendAudio, connection } = wakeSetup();
  ev('detect', { names: ['alexa'] });
  t.like(sent.at(-1), { type: 'error', data: { code: 'ENOMODEL' } });
  t.regex(String(sent.at(-1)!.data['text']), /listens for hey_edge, hey_other/);
  ev('detect', { names: 'hey_edge' });
  t.like(sent.at(-1), { type: 'error', data: { code: 'EFRAME' } });

  sent.length = 0;
  ev('detect', {});
  model.failWith = new Error('engine host exited');
  sendAudio(tone(1000, 0.4));
  await connection.idle();
  t.deepEqual(
    sent.map((e) => e.type),
    ['error'],
  );

  const none = setup();
  none.ev('detect', {});
  t.like(none.sent.at(-1), { type: 'error', data: { code: 'ENOMODEL' } });
  none.ev('audio-start', { rate: 16000, width: 2, channels: 1 });
  none.ev('audio-chunk', { rate: 16000, width: 2, channels: 1 }, Buffer.alloc(3200));
  none.ev('audio-stop');
  await none.connection.idle();
  t.is(none.sent.length, 1, 'refused: the audio that follows is neither scored nor transcribed');
});
