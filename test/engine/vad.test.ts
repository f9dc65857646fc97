// Express::Module on a real model: Silero VAD v5 over the fixture WAV reproduces the recorded probabilities
// and speech segments.
import { readFileSync } from 'node:fs';
import test from 'ava';
import { MnnGraph } from '../../engine/index.js';
import { engineOrSkip, media, models, readWavMono16 } from './_engine.js';

interface Segment {
  firstChunk: number;
  lastChunk: number;
  startSample: number;
  endSample: number;
}

const CHUNK = 512;
const CONTEXT = 64;

/** Silero's streaming protocol: 64 context samples + 512 new ones per call, state carried across calls. */
async function probabilities(vad: MnnGraph, samples: Float32Array): Promise<number[]> {
  const input = new Float32Array(CONTEXT + CHUNK);
  let state: Float32Array = new Float32Array(2 * 128);
  const sr = new Int32Array([16000]);
  const out: number[] = [];
  for (let start = 0; start < samples.length; start += CHUNK) {
    input.copyWithin(0, CHUNK); // the tail of the previous window becomes the context
    input.fill(0, CONTEXT);
    input.set(samples.subarray(start, start + CHUNK), CONTEXT);
    const [prob, stateN] = await vad.forward([
      { data: input, shape: [1, CONTEXT + CHUNK] },
      { data: state, shape: [2, 1, 128] },
      { data: sr, shape: [] },
    ]);
    out.push(prob!.data[0]!);
    state = stateN!.data as Float32Array;
  }
  return out;
}

function segmentsAt(probs: number[], threshold: number, numSamples: number): Segment[] {
  const segments: Segment[] = [];
  let first = -1;
  probs.forEach((p, i) => {
    if (p >= threshold && first < 0) first = i;
    if ((p < threshold || i === probs.length - 1) && first >= 0) {
      const last = p >= threshold ? i : i - 1;
      segments.push({
        firstChunk: first,
        lastChunk: last,
        startSample: first * CHUNK,
        endSample: Math.min((last + 1) * CHUNK, numSamples),
      });
      first = -1;
    }
  });
  return segments;
}

if (engineOrSkip(test, 'vad')) {
  test('silero-vad: probabilities and segments match the recorded MNN output', async (t) => {
    const expected = JSON.parse(readFileSync(media.vadExpected, 'utf8')) as {
      numSamples: number;
      probabilities: number[];
      segmentsThreshold05: { segments: Segment[] };
    };
    await using vad = await MnnGraph.load(models.sileroVad, {
      inputs: ['input', 'state', 'sr'],
      outputs: ['output', 'stateN'],
    });
    t.deepEqual(
      vad.info.inputs.map((i) => i.name),
      ['input', 'state', 'sr'],
    );
    const { samples, sampleRate } = readWavMono16(media.vadWav);
    t.is(sampleRate, 16000);
    t.is(samples.length, expected.numSamples);
    const probs = await probabilities(vad, samples);
    t.is(probs.length, expected.probabilities.length);
    const worst = Math.max(...probs.map((p, i) => Math.abs(p - expected.probabilities[i]!)));
    t.true(worst < 1e-3, `max |Δp| ${worst}`);
    t.deepEqual(
      segmentsAt(probs, 0.5, samples.length),
      expected.segmentsThreshold05.segments.map((s) => ({
        firstChunk: s.firstChunk,
        lastChunk: s.lastChunk,
        startSample: s.startSample,
        endSample: s.endSample,
      })),
    );
  });

  test('silero-vad: wrong tensor shapes and types are refused, the module stays usable', async (t) => {
    await using vad = await MnnGraph.load(models.sileroVad, {
      inputs: ['input', 'state', 'sr'],
      outputs: ['output', 'stateN'],
    });
    const good = () => [
      { data: new Float32Array(576), shape: [1, 576] },
      { data: new Float32Array(256), shape: [2, 1, 128] },
      { data: new Int32Array([16000]), shape: [] as number[] },
    ];
    const wrongState = good();
    wrongState[1] = { data: new Float32Array(128), shape: [2, 1, 64] };
    await t.throwsAsync(() => vad.forward(wrongState), {
      message: 'Module.forward: input "state" expects shape [2,-1,128] but received [2,1,64]',
    });
    const wrongCount = good();
    wrongCount[0] = { data: new Float32Array(500), shape: [1, 576] };
    await t.throwsAsync(() => vad.forward(wrongCount), {
      message: 'Module.forward: input "input" has 500 elements but shape [1,576] needs 576',
    });
    const wrongType = good();
    wrongType[2] = { data: new Float32Array([16000]), shape: [] };
    await t.throwsAsync(() => vad.forward(wrongType), {
      message: 'Module.forward: input "sr" expects int32 but received float32',
    });
    await t.throwsAsync(() => vad.forward(good().slice(0, 2)), {
      message: `Module.forward: ${models.sileroVad} takes 3 inputs but received 2`,
    });
    const [prob] = await vad.forward(good());
    t.deepEqual(prob!.shape, [1, 1]);
    t.true(prob!.data[0]! < 0.5);
  });
}
