// `mnn-edge wake scan` on real MNN with the project's keyword package (quick recipe, cached): real WAVs of other
// rates and channel counts, a missing file named while the rest is scanned, and the same detections as the
// keyword tools' detectStream (what the benchmark counts with) over the same audio.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { WakePipeline } from '../../engine/index.js';
import { positiveClip, randomVoice, splitVoices } from '../../engine/tools/wake-keyword/corpus.js';
import { detectStream } from '../../engine/tools/wake-keyword/features.js';
import {
  ensureWakeKeyword,
  keywordToolsMissing,
  QUICK_RECIPE,
} from '../../engine/tools/wake-keyword/make-keyword.js';
import { concat, rng } from '../../engine/tools/wake-keyword/speech.js';
import { resample } from '../../lib/audio/resample.js';
import { encodeWavS16 } from '../../lib/audio/wav.js';
import { readWakePackage } from '../../models/wake-package.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { runCli } from '../helpers/run-cli.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip } from './_engine.js';

const missing = engineOrSkip(test, 'wake scan') ? await keywordToolsMissing(QUICK_RECIPE) : 'engine';
if (missing && missing !== 'engine') {
  skipWithLine(`SKIP engine tests (wake scan): ${missing}`);
}

function s16(samples: Float32Array, channels = 1): Buffer {
  const b = Buffer.alloc(samples.length * 2 * channels);
  for (let i = 0; i < samples.length; i++)
    for (let c = 0; c < channels; c++)
      b.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), (i * channels + c) * 2);
  return b;
}

interface ScanJson {
  package: string;
  files: Array<{ file: string; seconds: number; error?: string }>;
  detections: Array<{ file: string; atSeconds: number; keyword: string; score: number }>;
  hours: number;
  perHour: Record<string, number>;
}

if (!missing) {
  let keyword = '';
  let work = '';
  let spoken: Float32Array = new Float32Array(0);
  test.before(async (t) => {
    t.timeout(20 * 60_000);
    keyword = await ensureWakeKeyword({ quick: true, log: (line) => t.log(line) });
    work = mkdtempSync(join(tmpdir(), 'wake-scan-'));
    const r = rng(77);
    const split = splitVoices(2028);
    const clips = [];
    for (let i = 0; i < 4; i++)
      clips.push((await positiveClip('hey computer', randomVoice(r, split.heldOut), r)).audio);
    // 2 s of silence first: the stream's warm-up never hides a keyword.
    spoken = concat([new Float32Array(32000), ...clips.flatMap((c) => [c, new Float32Array(40000)])]);
    writeFileSync(join(work, 'spoken-16k.wav'), encodeWavS16(s16(spoken), 16000));
  });
  test.after.always(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('the fixtures at 16 kHz mono and 48 kHz stereo are scanned; a missing file is named and the exit code says so', async (t) => {
    const gone = join(work, 'gone.wav');
    const r = await runCli('wake', 'scan', mediaFixturesDir, gone, '--keyword', keyword, '--json');
    t.is(r.code, 1, r.err);
    const out = JSON.parse(r.out) as ScanJson;
    t.is(out.package, keyword);
    const read = out.files.filter((f) => f.error === undefined);
    t.deepEqual(
      read.map((f) => f.file.split('/').pop()),
      ['speech-hello-16k.wav', 'speech-hello-48k-stereo.wav', 'vad-segments-16k.wav'],
    );
    // The 48 kHz stereo file is as long as its 16 kHz twin: converted, not dropped.
    t.true(Math.abs(read[0]!.seconds - read[1]!.seconds) < 0.01);
    t.regex(out.files.find((f) => f.error)!.error!, /gone\.wav: ENOENT/);
    t.true(out.hours > 0);
    t.regex(r.err, /error: .*gone\.wav/);
  });

  test('the scan and the keyword tools detectStream agree on the same audio, at 16 kHz and at 44.1 kHz stereo', async (t) => {
    const layout = readWakePackage(keyword, readdirSync(keyword));
    const rule = {
      threshold: layout.heads[0]!.threshold ?? 0.5,
      triggerFrames: layout.heads[0]!.triggerFrames ?? 1,
      refractoryMs: layout.heads[0]!.refractoryMs ?? 2000,
    };
    const pipeline = await WakePipeline.load(
      {
        melspectrogram: layout.melspectrogram,
        embedding: layout.embedding,
        heads: layout.heads.map((h) => ({ name: h.name, path: h.path, input: h.input, output: h.output })),
      },
      { threads: 1 },
    );
    const expected = await detectStream(pipeline, spoken, rule);
    await pipeline.dispose();
    const r = await runCli('wake', 'scan', join(work, 'spoken-16k.wav'), '--keyword', keyword, '--json');
    t.is(r.code, 0, r.err);
    const out = JSON.parse(r.out) as ScanJson;
    t.deepEqual(
      out.detections.map((d) => Math.round(d.atSeconds / 0.08)),
      expected.detections.map((j) => j + 1),
      'detection frames',
    );
    t.true(expected.detections.length > 0, 'the quick model hears some of the four phrases');
    // The same audio at 44.1 kHz stereo: resampled on the way in, the same detections within a frame.
    const stereo = join(work, 'spoken-44k-stereo.wav');
    writeFileSync(stereo, encodeWavS16(s16(resample(spoken, 16000, 44100), 2), 44100, 2));
    const r44 = await runCli('wake', 'scan', stereo, '--keyword', keyword);
    t.is(r44.code, 0, r44.err);
    const lines = r44.out.split('\n').filter((l) => l.includes('spoken-44k-stereo.wav  '));
    t.is(lines.length, expected.detections.length, r44.out);
    t.regex(r44.out, /scanned 0\.\d+ h \([\d.]+ s\) in 1 of 1 files/);
    t.regex(r44.out, /hey_computer: \d+ detection\(s\), [\d.]+ an hour \(threshold/);
  });
}
