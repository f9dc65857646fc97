// Shared by the engine test files: whether MNN and the addon are here, the fixture paths, and the one skip
// line a file prints when they are not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecutionContext, TestFn } from 'ava';
import { engineAvailability, unavailableMessage } from '../../engine/index.js';
import { compareWithMargins } from '../helpers/margin-rule.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';

export const models = {
  tinyLlm: join(modelFixturesDir, 'tiny-llm', 'config.json'),
  tinyLlmInt4: join(modelFixturesDir, 'tiny-llm-int4', 'config.json'),
  tinyVlm: join(modelFixturesDir, 'tiny-vlm', 'config.json'),
  tinyOmniAudio: join(modelFixturesDir, 'tiny-omni-audio', 'config.json'),
  sileroVad: join(modelFixturesDir, 'silero-vad', 'silero_vad.mnn'),
};

export const media = {
  speech16k: join(mediaFixturesDir, 'speech-hello-16k.wav'),
  speech48kStereo: join(mediaFixturesDir, 'speech-hello-48k-stereo.wav'),
  vadWav: join(mediaFixturesDir, 'vad-segments-16k.wav'),
  vadExpected: join(mediaFixturesDir, 'vad-segments-16k.expected.json'),
  gradient: join(mediaFixturesDir, 'test_gradient_96x80.png'),
  red: join(mediaFixturesDir, 'test_red_64x64.png'),
  frame0: join(mediaFixturesDir, 'camera-seq', 'frame-000.png'),
};

interface ExpectedCase {
  model: string;
  prompt: string;
  image: string | null;
  audio?: string | null;
  promptTokens: number;
  decodeTokens: number;
  outputTokenIds: number[];
  top1Top2LogitMargins?: number[];
  stoppedByStopToken: boolean;
  text: string;
}

type Precision = 'low' | 'normal' | 'high';

/**
 * The outputs the engine must reproduce exactly: the fixtures' x86 recording (the same text at every precision
 * there: the x86 CPU backend has no fp16 arithmetic), or, where the tests run on another build of MNN (the arm64
 * tier), the references that build's own llm_demo gave at each precision (MNN_EDGE_EXPECTED_OUTPUTS, written by
 * test/arm64/references.ts; fp16 differs by design there). Token ids exist only in the recording.
 */
function loadExpected(): { cases: Array<ExpectedCase & { precision?: Precision }> } {
  const other = process.env['MNN_EDGE_EXPECTED_OUTPUTS'];
  if (!other) {
    return JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
      cases: ExpectedCase[];
    };
  }
  const file = JSON.parse(readFileSync(other, 'utf8')) as {
    cases: Array<Omit<ExpectedCase, 'outputTokenIds'> & { precision: Precision }>;
  };
  return { cases: file.cases.map((c) => ({ ...c, outputTokenIds: [] })) };
}

const expected = loadExpected();

/**
 * llm_demo's greedy output for a model and (optional) media file, at the precision the model ran at (default the
 * fixtures' config, `high`; the runtime's placements run at `low`).
 */
export function expectedOutput(
  model: string,
  mediaPath: string | null = null,
  precision: Precision = 'high',
): ExpectedCase {
  const found = expected.cases.find(
    (c) =>
      c.model === model &&
      (c.image ?? c.audio ?? null) === mediaPath &&
      !c.prompt.includes('48k') &&
      (c.precision === undefined || c.precision === precision),
  );
  if (!found) throw new Error(`no expected output for ${model} ${mediaPath ?? ''} at precision ${precision}`);
  return found;
}

/**
 * A generation against llm_demo's: the same text, or, on an MNN build other than the one the fixtures were recorded
 * with (other kernels: AVX-512 where the recording had AVX2, another ISA), the fixtures' margin rule on the token
 * ids (test/helpers/margin-rule.ts; fixtures/README.md prescribes it for such a build). References of the same
 * build (MNN_EDGE_EXPECTED_OUTPUTS) carry no token ids, so there the text must be exact.
 */
export function assertLikeRecording(
  t: ExecutionContext,
  want: ExpectedCase,
  text: string,
  outputIds: ArrayLike<number> | undefined,
  what: string,
): void {
  if (text === want.text) {
    t.pass();
    return;
  }
  const margins = want.top1Top2LogitMargins;
  if (margins === undefined || want.outputTokenIds.length === 0 || outputIds === undefined) {
    t.is(text, want.text, what);
    return;
  }
  const verdict = compareWithMargins({ ...want, top1Top2LogitMargins: margins }, Array.from(outputIds));
  t.log(`${what}: not the recorded text on this build; ${verdict.summary}`);
  t.true(verdict.ok, `${what}: ${verdict.summary}`);
}

/** llm_demo writes end_with ("\n") after a stop token; the engine stream carries only the tokens' text. */
export function llmDemoText(text: string, finishReason: string): string {
  return finishReason === 'stop' ? `${text}\n` : text;
}

/**
 * Registers one skipped test and prints one line when the engine is unavailable; returns whether the file's
 * tests should be registered.
 */
export function engineOrSkip(test: TestFn, what: string): boolean {
  const availability = engineAvailability();
  if (availability.available) return true;
  skipWithLine(`SKIP engine tests (${what}): ${unavailableMessage(availability.reason)}`, test);
  return false;
}

/** Reads a 16-bit PCM mono WAV into float samples (s16 / 32768), enough for the fixture files. */
export function readWavMono16(path: string): { samples: Float32Array; sampleRate: number } {
  const buf = readFileSync(path);
  let offset = 12;
  let sampleRate = 0;
  let channels = 0;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('ascii', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      channels = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
      if (buf.readUInt16LE(body + 14) !== 16) throw new Error(`${path}: not 16-bit PCM`);
    } else if (id === 'data') {
      const frames = Math.floor(size / (2 * channels));
      const samples = new Float32Array(frames);
      for (let i = 0; i < frames; i++) samples[i] = buf.readInt16LE(body + i * 2 * channels) / 32768;
      return { samples, sampleRate };
    }
    offset = body + size + (size % 2);
  }
  throw new Error(`${path}: no data chunk`);
}
