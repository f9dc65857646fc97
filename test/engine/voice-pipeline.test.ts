// The voice pipeline on the real engine, every model in an engine host behind the runtime's slots: Silero VAD on
// voice.vad (a graph host), tiny-omni-audio on voice.asr (the audio really goes through its encoder; its text is
// gibberish), tiny-llm on voice.llm, espeak-ng as TTS.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { openStore } from '../../agent/store/database.js';
import { WavFileSink } from '../../agent/workloads/audio/io.js';
import { rms } from '../../agent/workloads/audio/pcm.js';
import { VAD_FRAME_SAMPLES } from '../../agent/workloads/audio/vad.js';
import { resolveVoiceConfig } from '../../agent/workloads/config.js';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { runVoiceLoop } from '../../agent/workloads/voice/loop.js';
import { UtteranceSegmenter } from '../../agent/workloads/voice/segmenter.js';
import { VoiceService } from '../../agent/workloads/voice/service.js';
import type { VoiceEvents } from '../../agent/workloads/voice/session.js';
import { AudioLlmAsr } from '../../agent/workloads/voice/stages.js';
import { VoiceTurnStore } from '../../agent/workloads/voice/turn-store.js';
import { parseWav } from '../../lib/audio/wav.js';
import { systemClock } from '../../lib/clock.js';
import { engineOrSkip, media } from './_engine.js';
import { assertServed, startSlotRuntime, voiceSlots } from './_slots.js';

if (engineOrSkip(test, 'voice pipeline')) {
  const slots = await startSlotRuntime(['silero-vad', 'tiny-omni-audio', 'tiny-llm'], voiceSlots);
  test.after.always(() => slots.close());
  const shared = slotModels(() => slots.runtime);

  test.serial('every voice model runs in its own engine host, none in this process', (t) => {
    assertServed(t, slots.runtime, voiceSlots);
    const instances = slots.runtime.state().instances;
    t.deepEqual(instances.map((i) => i.modelId).sort(), ['silero-vad', 'tiny-llm', 'tiny-omni-audio']);
    t.true(instances.every((i) => i.pid > 0 && i.pid !== process.pid));
  });

  test.serial('Silero VAD through the workload VAD gives the recorded segments', async (t) => {
    const expected = JSON.parse(readFileSync(media.vadExpected, 'utf8')) as {
      segmentsSileroDefaults: { segments: Array<{ startSample: number; endSample: number }> };
    };
    const vad = shared.vad();
    t.is(vad.kind, 'silero');
    const seg = new UtteranceSegmenter({ hangoverMs: 100, padMs: 30 });
    const found: Array<[number, number]> = [];
    const samples = parseWav(readFileSync(media.vadWav)).channels[0]!;
    for (let i = 0; i < samples.length; i += VAD_FRAME_SAMPLES) {
      const frame = new Float32Array(VAD_FRAME_SAMPLES);
      frame.set(samples.subarray(i, i + VAD_FRAME_SAMPLES));
      for (const e of seg.push(frame, await vad.process(frame))) {
        if (e.type === 'utterance') found.push([e.utterance.startSample, e.utterance.endSample]);
      }
    }
    for (const e of seg.flush())
      if (e.type === 'utterance') found.push([e.utterance.startSample, e.utterance.endSample]);
    t.deepEqual(
      found,
      expected.segmentsSileroDefaults.segments.map((s) => [s.startSample, s.endSample]),
    );
    await vad.dispose();
  });

  test.serial('the ASR stage feeds the utterance through the audio encoder', async (t) => {
    const omni = shared.chat('voice.asr');
    t.is(omni.id, 'tiny-omni-audio');
    const asr = new AudioLlmAsr(omni, { instruction: 'Hello', maxNewTokens: 32 });
    const speech = parseWav(readFileSync(media.speech16k)).channels[0]!;
    const heard = await asr.transcribe(speech, new AbortController().signal);
    // 33,631 samples → 210 frames → 52 audio tokens + audio_start/end on top of the 9 text tokens (fixtures README).
    t.is(heard.result.promptTokens, 9 + 54);
    t.is(heard.text, ';in themdf. thiscoQ helloa no could'.trim());
    await t.throwsAsync(asr.transcribe(new Float32Array(100), new AbortController().signal), {
      message: 'Utterance too short for speech recognition: 100 samples (at least 1600, 100 ms at 16 kHz)',
    });
  });

  test.serial(
    'a WAV conversation: two requests, two turns with transcripts, speech out, metrics stored',
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-voice-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const db = openStore(':memory:');
      const store = new VoiceTurnStore(db, { maxTurns: 100, maxAgeHours: 24 });
      const service = new VoiceService(resolveVoiceConfig({ maxNewTokens: 24 }), {
        models: shared,
        clock: systemClock,
        sink: store,
      });
      const session = await service.open('wav-1', { duplex: 'full' });
      const log: Array<{ type: string; turn?: number }> = [];
      for (const type of [
        'speech-start',
        'speech-end',
        'transcript',
        'reply-delta',
        'audio',
        'turn-end',
      ] as const) {
        session.on(type, (e: VoiceEvents[typeof type]) =>
          log.push({ type, ...('turn' in e ? { turn: e.turn } : {}) }),
        );
      }
      const out = join(dir, 'reply.wav');
      // The second request comes after the first reply, as in a conversation (pushed at once it would barge in).
      const audio = parseWav(readFileSync(media.vadWav)).channels[0]!;
      const middle = 61631; // inside the 1.5 s of silence between the two requests
      async function* conversation() {
        yield audio.subarray(0, middle);
        await session.idle();
        yield audio.subarray(middle);
      }
      await runVoiceLoop(session, conversation(), new WavFileSink(out));
      await session.close();
      t.is(service.sessions, 0);

      const turns = store.recent().reverse();
      t.deepEqual(
        turns.map((x) => [x.turn, x.status]),
        [
          [1, 'completed'],
          [2, 'completed'],
        ],
      );
      const last = turns.at(-1)!;
      t.is(last.status, 'completed');
      t.true(last.transcript !== undefined && last.transcript.length > 0);
      t.true((last.reply ?? '').length > 0);
      t.true(last.metrics.promptTokens! > 0 && last.metrics.generatedTokens! > 0);
      for (const k of ['asrMs', 'ttftMs', 'ttfaMs', 'asrRtf', 'ttsRtf', 'tokensPerSec'] as const) {
        t.true(typeof last.metrics[k] === 'number', k);
      }
      // Per turn: transcript, then text, then audio; each turn ends with turn-end.
      for (const turn of turns.map((x) => x.turn)) {
        const own = log.filter((e) => e.turn === turn).map((e) => e.type);
        t.is(own[0], 'speech-end');
        t.is(own[1], 'transcript');
        t.true(own.indexOf('reply-delta') < own.indexOf('audio'));
        t.is(own.at(-1), 'turn-end');
      }
      const wav = parseWav(readFileSync(out));
      const seconds = wav.channels[0]!.length / wav.sampleRate;
      t.true(seconds > 0.5 && seconds < 60, `reply audio ${seconds} s`);
      t.true(rms(wav.channels[0]!) > 0.01, 'espeak-ng produced audible speech');
    },
  );

  test.serial(
    'barge-in on the engine: speech during generation aborts it, the next request is answered',
    async (t) => {
      const service = new VoiceService(
        resolveVoiceConfig({
          // Long enough that the reply is still being generated when the user speaks again.
          maxNewTokens: 1500,
        }),
        { models: shared, clock: systemClock },
      );
      const session = await service.open('barge', { duplex: 'full' });
      const log: Array<{ type: string; turn?: number; status?: string }> = [];
      for (const type of ['speech-end', 'barge-in', 'turn-end'] as const) {
        session.on(type, (e: VoiceEvents[typeof type]) =>
          log.push({ type, turn: e.turn, ...('status' in e ? { status: e.status } : {}) }),
        );
      }
      const audio = parseWav(readFileSync(media.vadWav)).channels[0]!;
      const firstDelta = new Promise<void>((resolve) => session.once('reply-delta', () => resolve()));
      session.pushAudio(audio.subarray(0, 61631));
      await firstDelta;
      session.pushAudio(audio.subarray(61631));
      await session.endOfInput();
      await session.idle();
      await session.close();
      t.deepEqual(log, [
        { type: 'speech-end', turn: 1 },
        { type: 'barge-in', turn: 1 },
        { type: 'turn-end', turn: 1, status: 'cancelled' },
        { type: 'speech-end', turn: 2 },
        { type: 'turn-end', turn: 2, status: 'completed' },
      ]);
    },
  );
}
