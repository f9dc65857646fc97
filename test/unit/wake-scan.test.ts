// wake scan's counting (agent/workloads/wake/scan.ts) over a stand-in model whose score is the frame's loudness:
// one stream across the files, detections placed in the file their frame ends in, unreadable files named and
// skipped, hours and detections an hour.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { listAudioFiles, scanFiles } from '../../agent/workloads/wake/scan.js';
import type { WakeTensorModel } from '../../agent/workloads/wake/stream.js';

/** Scores each 80 ms frame by its peak: a loud frame scores 0.9, silence 0 (a test double, not a model). */
const loudness: WakeTensorModel = {
  async forward(inputs) {
    const audio = inputs[0]!.data;
    let peak = 0;
    for (const x of audio) peak = Math.max(peak, Math.abs(x));
    const empty = new Float32Array(1);
    return [
      { name: 'scores', data: Float32Array.of(peak > 0.5 ? 0.9 : 0), shape: [1] },
      { name: 'tail', data: empty, shape: [1] },
      { name: 'mel', data: empty, shape: [1] },
      { name: 'embeddings', data: empty, shape: [1] },
    ];
  },
};
const rule = { name: 'kw', index: 0, threshold: 0.5, triggerFrames: 2, refractoryMs: 2000 };

/** Seconds of silence with loud bursts (0.3 s each) at the given times. */
function audio(seconds: number, bursts: number[]): Float32Array {
  const a = new Float32Array(Math.round(seconds * 16000));
  for (const b of bursts) a.fill(0.8, Math.round(b * 16000), Math.round((b + 0.3) * 16000));
  return a;
}

async function* chunks(a: Float32Array): AsyncGenerator<Float32Array> {
  for (let at = 0; at < a.length; at += 7000) yield a.subarray(at, at + 7000);
}

test('one stream across files: a detection is in the file its frame ends in, at its time there', async (t) => {
  const files: Record<string, Float32Array> = {
    'a.wav': audio(5, [2]), // the first second is warm-up; a burst at 2 s is heard
    'b.ogg': audio(1, [0.2]), // a short clip: the stream is warm already
    'c.wav': audio(2, []),
  };
  const seen: string[] = [];
  const report = await scanFiles(Object.keys(files), loudness, [rule], {
    decode: (p) => chunks(files[p]!),
    onDetection: (d) => seen.push(d.file),
  });
  t.deepEqual(seen, ['a.wav', 'b.ogg']);
  t.deepEqual(
    report.detections.map((d) => [
      d.file,
      Math.round(d.atSeconds * 100) / 100,
      d.keyword,
      Math.round(d.score * 100) / 100,
    ]),
    [
      ['a.wav', 2.16, 'kw', 0.9],
      // b starts mid-frame (5 s is 62.5 frames): its burst at 0.2 s ends the second loud frame at 0.36 s.
      ['b.ogg', 0.36, 'kw', 0.9],
    ],
  );
  t.is(report.seconds, 8);
  t.is(report.hours, 8 / 3600);
  t.is(report.perHour['kw'], 2 / (8 / 3600));
});

test('the warm-up is the stream start only, and the refractory period holds across files', async (t) => {
  const files: Record<string, Float32Array> = { 'x.wav': audio(1.5, [0.1]), 'y.wav': audio(1, [0.5]) };
  const report = await scanFiles(Object.keys(files), loudness, [rule], { decode: (p) => chunks(files[p]!) });
  // x's burst falls in the warm-up (first 12 frames); y's is 0.9 s after x's end: heard.
  t.deepEqual(
    report.detections.map((d) => d.file),
    ['y.wav'],
  );
});

test('a file that fails is named with its error; the others are scanned', async (t) => {
  const files = ['good.wav', 'bad.mp3', 'late.wav'];
  const report = await scanFiles(files, loudness, [rule], {
    decode: (p) => {
      if (p === 'bad.mp3') {
        return (async function* () {
          yield audio(0.5, []);
          throw new Error('bad.mp3: ffmpeg could not decode it (Invalid data)');
        })();
      }
      return chunks(audio(2, [1.5]));
    },
  });
  t.deepEqual(
    report.files.map((f) => [f.file, f.seconds, f.error]),
    [
      ['good.wav', 2, undefined],
      ['bad.mp3', 0.5, 'bad.mp3: ffmpeg could not decode it (Invalid data)'],
      ['late.wav', 2, undefined],
    ],
  );
  t.deepEqual(
    report.detections.map((d) => d.file),
    ['good.wav', 'late.wav'],
  );
});

test('listAudioFiles walks directories (sorted, audio only) and names paths that do not exist', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'scan-'));
  try {
    mkdirSync(join(dir, 'sub'));
    for (const f of ['b.ogg', 'a.WAV', 'notes.txt', 'sub/c.flac']) writeFileSync(join(dir, f), '');
    const { files, missing } = listAudioFiles([dir, join(dir, 'notes.txt'), join(dir, 'gone.wav')]);
    t.deepEqual(files, [
      join(dir, 'a.WAV'),
      join(dir, 'b.ogg'),
      join(dir, 'sub', 'c.flac'),
      join(dir, 'notes.txt'),
    ]);
    t.is(missing.length, 1);
    t.regex(missing[0]!.error!, /gone\.wav: ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
