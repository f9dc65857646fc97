// Shared by the engine test files: whether MNN and the addon are here, the fixture paths, and the one skip
// line a file prints when they are not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestFn } from 'ava';
import { engineAvailability, unavailableMessage } from '../../engine/src/index.js';
import { mediaFixturesDir, modelFixturesDir } from '../helpers/paths.js';

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
  stoppedByStopToken: boolean;
  text: string;
}

const expected = JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
  cases: ExpectedCase[];
};

/** llm_demo's recorded greedy output for a model and (optional) media file from the fixtures README. */
export function expectedOutput(model: string, mediaPath: string | null = null): ExpectedCase {
  const found = expected.cases.find(
    (c) => c.model === model && (c.image ?? c.audio ?? null) === mediaPath && !c.prompt.includes('48k'),
  );
  if (!found) throw new Error(`no expected output for ${model} ${mediaPath ?? ''}`);
  return found;
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
  const line = `SKIP engine tests (${what}): ${unavailableMessage(availability.reason)}`;
  console.log(line);
  test.skip(line, () => {});
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
