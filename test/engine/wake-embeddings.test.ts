// bench/lib/wake-embeddings.ts on real MNN with the project's keyword package (quick recipe, cached): embeddings
// recorded once over a stream of files (features only, no head), replayed through the package's head, give the
// same score at every frame and the same detections as the live scan `mnn-edge wake scan` runs, file by file.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { scanFiles } from '../../agent/workloads/wake/scan.js';
import type { KeywordSetting, WakeTensorModel } from '../../agent/workloads/wake/stream.js';
import { recordedFiles, recordingModel, replayModel, silenceOf } from '../../bench/lib/wake-embeddings.js';
import { WakePipeline } from '../../engine/index.js';
import { positiveClip, randomVoice, splitVoices } from '../../engine/tools/wake-keyword/corpus.js';
import {
  ensureWakeKeyword,
  keywordToolsMissing,
  QUICK_RECIPE,
} from '../../engine/tools/wake-keyword/make-keyword.js';
import { concat, rng } from '../../engine/tools/wake-keyword/speech.js';
import { decodeAudioFile } from '../../lib/audio/decode-file.js';
import { encodeWavS16 } from '../../lib/audio/wav.js';
import { readWakePackage } from '../../models/wake-package.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip } from './_engine.js';

const missing = engineOrSkip(test, 'wake embeddings') ? await keywordToolsMissing(QUICK_RECIPE) : 'engine';
if (missing && missing !== 'engine') {
  skipWithLine(`SKIP engine tests (wake embeddings): ${missing}`);
}

function s16(samples: Float32Array): Buffer {
  const b = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    b.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return b;
}

/** The model's scores at every step, kept beside its answers. */
function scoring(model: WakeTensorModel, into: number[]): WakeTensorModel {
  return {
    forward: async (inputs) => {
      const out = await model.forward(inputs);
      into.push(Number(out.find((o) => o.name === 'scores')!.data[0]));
      return out;
    },
  };
}

if (!missing) {
  test('replayed embeddings give the live scan’s scores and detections over the same files', async (t) => {
    t.timeout(20 * 60_000);
    const dir = await ensureWakeKeyword({ quick: true, log: (line) => t.log(line) });
    const work = mkdtempSync(join(tmpdir(), 'wake-embeddings-'));
    try {
      const r = rng(78);
      const split = splitVoices(2028);
      const clips = [];
      for (let i = 0; i < 3; i++)
        clips.push((await positiveClip('hey computer', randomVoice(r, split.heldOut), r)).audio);
      const spoken = join(work, 'spoken.wav');
      writeFileSync(
        spoken,
        encodeWavS16(s16(concat(clips.flatMap((c) => [c, new Float32Array(20000)]))), 16000),
      );
      const files = [
        join(mediaFixturesDir, 'speech-hello-48k-stereo.wav'),
        spoken,
        join(mediaFixturesDir, 'vad-segments-16k.wav'),
      ];
      const layout = readWakePackage(dir, readdirSync(dir));
      const head = layout.heads[0]!;
      const pipeline = await WakePipeline.load(
        { melspectrogram: layout.melspectrogram, embedding: layout.embedding, heads: [head] },
        { threads: 1 },
      );
      try {
        // A low threshold, so the comparison has detections to compare.
        const keyword: KeywordSetting = {
          name: head.name,
          index: 0,
          threshold: 0.2,
          triggerFrames: 1,
          refractoryMs: 500,
        };
        const decode = (p: string) => decodeAudioFile(p);
        const liveScores: number[] = [];
        const live = await scanFiles(
          files,
          scoring({ forward: (i) => pipeline.forward(i) }, liveScores),
          [keyword],
          {
            decode,
          },
        );
        const recording = join(work, 'embeddings.f32');
        const rec = recordingModel({ forward: (i) => pipeline.forward(i) }, recording);
        const recorded = await scanFiles(files, rec.model, [keyword], { decode });
        rec.close();
        writeFileSync(
          `${recording}.files.json`,
          JSON.stringify(
            recorded.files.map((f) => ({ file: f.file, samples: Math.round(f.seconds * 16000) })),
          ),
        );
        const list = recordedFiles(recording);
        t.is(list.length, files.length);
        const replayScores: number[] = [];
        const replay = replayModel(pipeline, recording);
        const again = await scanFiles(files, scoring(replay.model, replayScores), [keyword], {
          decode: silenceOf(list),
        });
        t.is(replay.left(), 0);
        t.is(replayScores.length, liveScores.length);
        t.true(
          replayScores.every((s, i) => Math.abs(s - liveScores[i]!) < 1e-5),
          'every frame scores the same',
        );
        t.true(live.detections.length > 0, 'the spoken file is detected');
        t.deepEqual(
          again.detections.map((d) => [d.file, d.atSeconds]),
          live.detections.map((d) => [d.file, d.atSeconds]),
        );
        t.is(again.seconds, live.seconds);
      } finally {
        await pipeline.dispose();
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
}
