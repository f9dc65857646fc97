// The wake word on real MNN: the project's own keyword package (made by engine/tools/wake-keyword with the quick
// recipe, cached), checked at import, loaded into an engine host and streamed 80 ms at a time.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { WakeStream } from '../../agent/workloads/wake/stream.js';
import { EngineHostClient, WakePipeline } from '../../engine/index.js';
import { mnnConvertPath } from '../../engine/tools/wake-keyword/convert.js';
import { positiveClip, randomVoice, splitVoices } from '../../engine/tools/wake-keyword/corpus.js';
import {
  ensureWakeKeyword,
  keywordToolsMissing,
  QUICK_RECIPE,
} from '../../engine/tools/wake-keyword/make-keyword.js';
import { headToOnnx } from '../../engine/tools/wake-keyword/onnx.js';
import { rng } from '../../engine/tools/wake-keyword/speech.js';
import { readWakePackage } from '../../models/wake-package.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip } from './_engine.js';

const missing = engineOrSkip(test, 'wake word') ? await keywordToolsMissing(QUICK_RECIPE) : 'engine';
if (missing && missing !== 'engine') {
  skipWithLine(`SKIP engine tests (wake word): ${missing}`);
}

if (!missing) {
  let dir = '';
  let layout: ReturnType<typeof readWakePackage>;
  test.before(async (t) => {
    // First run on a machine: the quick recipe takes minutes (synthesis, features, training, conversion).
    t.timeout(20 * 60_000);
    dir = await ensureWakeKeyword({ quick: true, log: (line) => t.log(line) });
    layout = readWakePackage(dir, readdirSync(dir));
  });

  test('the generated package fits the pipeline: feature graphs and the keyword head with their tensor names', (t) => {
    t.is(layout.heads.length, 1);
    t.like(layout.heads[0], {
      name: 'hey_computer',
      phrase: 'hey computer',
      input: 'input',
      output: 'score',
    });
    t.is(layout.embedding.input, 'input_1');
  });

  test('a head of the wrong shape is refused at import with the shape it has and the shape needed', (t) => {
    const bad = mkdtempSync(join(tmpdir(), 'wake-bad-'));
    try {
      copyFileSync(join(dir, 'melspectrogram.mnn'), join(bad, 'melspectrogram.mnn'));
      copyFileSync(join(dir, 'embedding_model.mnn'), join(bad, 'embedding_model.mnn'));
      const hidden = 4;
      writeFileSync(
        join(bad, 'wide.onnx'),
        headToOnnx({
          inputShape: [1, 16, 64],
          hidden,
          w1: new Float32Array(16 * 64 * hidden),
          b1: new Float32Array(hidden),
          w2: new Float32Array(hidden),
          b2: 0,
        }),
      );
      execFileSync(
        mnnConvertPath(),
        ['-f', 'ONNX', '--modelFile', join(bad, 'wide.onnx'), '--MNNModel', join(bad, 'wide.mnn')],
        { stdio: 'ignore' },
      );
      rmSync(join(bad, 'wide.onnx'));
      t.throws(() => readWakePackage(bad, readdirSync(bad)), {
        message:
          /wide\.mnn \(keyword head wide\) has input input \[1,16,64\]; the pipeline needs input \[\?,16,96\] and output \[\?,1\]/,
      });
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });

  test('the engine host runs the pipeline frame by frame with the state carried by the stream; scores match in-process MNN', async (t) => {
    const split = splitVoices(2028);
    const r = rng(11);
    const clip = await positiveClip('hey computer', randomVoice(r, split.heldOut), r);
    const files = {
      melspectrogram: layout.melspectrogram,
      embedding: layout.embedding,
      heads: layout.heads.map((h) => ({ name: h.name, path: h.path, input: h.input, output: h.output })),
    };
    const host = await EngineHostClient.start({ name: 'wake-test' });
    try {
      t.deepEqual((await host.loadWake(files, { threads: 1 })).keywords, ['hey_computer']);
      const keywords = [
        { name: 'hey_computer', index: 0, threshold: 0.5, triggerFrames: 1, refractoryMs: 2000 },
      ];
      const stream = new WakeStream({ forward: (inputs) => host.forward(inputs) }, keywords);
      const frames = await stream.push(clip.audio);
      t.is(frames.length, Math.floor(clip.audio.length / 1280));
      const local = await WakePipeline.load(files, { threads: 1 });
      let state = local.initialState();
      const scores: number[] = [];
      for (let at = 0; at + 1280 <= clip.audio.length; at += 1280) {
        const step = await local.step(clip.audio.subarray(at, at + 1280), state);
        state = step.state;
        scores.push(step.scores[0]!);
      }
      await local.dispose();
      // Warm-up frames are reported as 0 by the stream; after them the host's scores are the in-process ones.
      for (const [i, f] of frames.entries())
        if (i >= 12) t.true(Math.abs(f.scores['hey_computer']! - scores[i]!) < 1e-5, `frame ${i}`);
      t.true(frames.every((f) => f.scores['hey_computer']! >= 0 && f.scores['hey_computer']! <= 1));
    } finally {
      await host.close();
    }
  });
}
