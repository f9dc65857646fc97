import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { EnergyVad, VAD_FRAME_SAMPLES } from '../../agent/workloads/audio/vad.js';
import { type SegmenterEvent, UtteranceSegmenter } from '../../agent/workloads/voice/segmenter.js';
import { parseWav } from '../../lib/audio/wav.js';
import { mediaFixturesDir } from '../helpers/paths.js';

interface Expected {
  numSamples: number;
  probabilities: number[];
  segmentsSileroDefaults: { segments: Array<{ startSample: number; endSample: number }> };
}
const expected = JSON.parse(
  readFileSync(join(mediaFixturesDir, 'vad-segments-16k.expected.json'), 'utf8'),
) as Expected;
const truth = JSON.parse(readFileSync(join(mediaFixturesDir, 'vad-segments-16k.truth.json'), 'utf8')) as {
  speechSegments?: Array<{ startSample: number; endSample: number }>;
};
const audio = parseWav(readFileSync(join(mediaFixturesDir, 'vad-segments-16k.wav'))).channels[0]!;

function frames(): Float32Array[] {
  const out: Float32Array[] = [];
  for (let i = 0; i < audio.length; i += VAD_FRAME_SAMPLES) {
    const f = new Float32Array(VAD_FRAME_SAMPLES);
    f.set(audio.subarray(i, i + VAD_FRAME_SAMPLES));
    out.push(f);
  }
  return out;
}

function utterances(events: SegmenterEvent[]) {
  return events.flatMap((e) => (e.type === 'utterance' ? [e.utterance] : []));
}

test("segmenter with Silero's defaults reproduces get_speech_timestamps on the recorded probabilities", (t) => {
  const seg = new UtteranceSegmenter({ threshold: 0.5, minSpeechMs: 250, hangoverMs: 100, padMs: 30 });
  const events = frames().flatMap((f, i) => seg.push(f, expected.probabilities[i]!));
  events.push(...seg.flush());
  t.deepEqual(
    utterances(events).map((u) => [u.startSample, u.endSample]),
    expected.segmentsSileroDefaults.segments.map((s) => [s.startSample, s.endSample]),
  );
  t.true(utterances(events).every((u) => u.samples.length === u.endSample - u.startSample));
});

test('segmenter with the assistant defaults keeps each spoken request whole', (t) => {
  const seg = new UtteranceSegmenter();
  const events = frames().flatMap((f, i) => seg.push(f, expected.probabilities[i]!));
  events.push(...seg.flush());
  const us = utterances(events);
  t.is(us.length, 2);
  t.deepEqual(
    events.filter((e) => e.type === 'speech-start').length,
    2,
    'one speech-start per utterance, the sentence pause does not start a new one',
  );
  t.true(us.every((u) => u.endedBy === 'silence'));
  // Within 100 ms of the ground truth (16000 samples/s).
  const truthSegs = truth.speechSegments ?? [
    { startSample: 16000, endSample: 49631 },
    { startSample: 73631, endSample: 107262 },
  ];
  us.forEach((u, i) => {
    t.true(Math.abs(u.startSample - truthSegs[i]!.startSample) < 1600, `start ${u.startSample}`);
    t.true(Math.abs(u.endSample - truthSegs[i]!.endSample) < 1600, `end ${u.endSample}`);
  });
});

test('energy VAD finds the two utterances of the composite WAV', async (t) => {
  const vad = new EnergyVad();
  const seg = new UtteranceSegmenter();
  const events: SegmenterEvent[] = [];
  for (const f of frames()) events.push(...seg.push(f, await vad.process(f)));
  events.push(...seg.flush());
  const us = utterances(events);
  t.is(us.length, 2);
  t.true(Math.abs(us[0]!.startSample - 16000) < 1600);
  t.true(Math.abs(us[1]!.endSample - 107262) < 1600 + 8000, `end ${us[1]!.endSample}`);
});

test('short blips are discarded and long speech is cut at maxUtteranceMs', (t) => {
  const seg = new UtteranceSegmenter({ minSpeechMs: 250, hangoverMs: 100, maxUtteranceMs: 1000 });
  const f = new Float32Array(VAD_FRAME_SAMPLES);
  const events: SegmenterEvent[] = [];
  // 3 frames (96 ms) of speech, then silence.
  for (let i = 0; i < 10; i++) events.push(...seg.push(f, i < 3 ? 0.9 : 0.05));
  t.deepEqual(
    events.map((e) => e.type),
    ['speech-start', 'discarded'],
  );
  const long: SegmenterEvent[] = [];
  for (let i = 0; i < 70; i++) long.push(...seg.push(f, 0.9));
  const cut = utterances(long);
  t.is(cut.length, 2);
  t.is(cut[0]!.endedBy, 'max-length');
  t.true(cut[0]!.samples.length >= 16000 && cut[0]!.samples.length < 16000 + VAD_FRAME_SAMPLES * 2);
});

test('VAD frames of the wrong size are refused', async (t) => {
  await t.throwsAsync(new EnergyVad().process(new Float32Array(100)), {
    message: 'VAD frame must be a Float32Array of 512 samples, got 100',
  });
});

test("an utterance's samples are the audio from its start to its end, past the collecting buffer's growth, and stay its own after the next one", (t) => {
  // 12 s of speech (the buffer starts with room for 3 s and doubles), each sample its own index in the stream.
  const seg = new UtteranceSegmenter({ hangoverMs: 96, padMs: 32, maxUtteranceMs: 60_000 });
  let position = 0;
  const frame = (speech: boolean) => {
    const f = new Float32Array(VAD_FRAME_SAMPLES);
    for (let i = 0; i < f.length; i++) f[i] = position + i;
    position += f.length;
    return seg.push(f, speech ? 1 : 0);
  };
  const events: SegmenterEvent[] = [];
  const speak = (frames: number) => {
    for (let i = 0; i < 4; i++) events.push(...frame(false));
    for (let i = 0; i < frames; i++) events.push(...frame(true));
    for (let i = 0; i < 4; i++) events.push(...frame(false));
  };
  speak(375);
  const [first] = utterances(events);
  const copy = Float32Array.from(first!.samples);
  speak(40);
  const [, second] = utterances(events);
  for (const u of [first!, second!]) {
    t.is(u.samples.length, u.endSample - u.startSample);
    t.true(
      u.samples.every((v, i) => v === u.startSample + i),
      `${u.startSample}-${u.endSample}`,
    );
  }
  t.is(first!.samples.length, 375 * VAD_FRAME_SAMPLES + 2 * VAD_FRAME_SAMPLES);
  t.deepEqual(first!.samples, copy, 'the next utterance is collected elsewhere');
});
