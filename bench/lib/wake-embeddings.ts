// The held-out real audio's embeddings, computed once and replayed (issue 45). Scanning 8+ hours through the
// melspectrogram and embedding models is nearly all of bench/wake's time, and a keyword head is a tiny part of a
// step; so a run records, frame by frame, the one new embedding each 80 ms step adds to the window, and later
// runs replay them through the heads they judge. The replay is a WakeTensorModel under the same scanFiles and
// WakeStream (warm-up, trigger rules, one stream across the files, the detection's file), so it counts what a
// live scan counts: the scores are the heads' on the same windows.
//
//   npx tsx bench/lib/wake-embeddings.ts record OUT.f32 [HOURS]   (features only: no keyword needed)
import { closeSync, existsSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { scanFiles } from '../../agent/workloads/wake/scan.js';
import type { WakeTensorModel } from '../../agent/workloads/wake/stream.js';
import { EMBEDDING_DIM, HEAD_WINDOW, WakePipeline } from '../../engine/src/wake.js';
import { ensureFeatureModels, wakeCacheDir } from '../../engine/tools/wake-keyword/convert.js';
import type { RealClip } from '../../engine/tools/wake-keyword/real-audio.js';
import { realClips } from '../../engine/tools/wake-keyword/real-audio.js';
import { decodeAudioFile } from '../../lib/audio/decode-file.js';
import { wakeFeatureGraphs } from '../../models/wake-package.js';

type Forward = WakeTensorModel['forward'];

/** Wraps a live model: every step's new embedding (the last row of the window it returns) goes to `file`. */
export function recordingModel(
  live: WakeTensorModel,
  file: string,
): { model: WakeTensorModel; close(): number } {
  const fd = openSync(file, 'w');
  let rows = 0;
  const buffer = new Float32Array(EMBEDDING_DIM * 4096);
  let used = 0;
  const flush = () => {
    writeSync(fd, new Uint8Array(buffer.buffer, 0, used * 4));
    used = 0;
  };
  const forward: Forward = async (inputs) => {
    const out = await live.forward(inputs);
    const e = out.find((o) => o.name === 'embeddings')!.data as Float32Array;
    buffer.set(e.subarray((HEAD_WINDOW - 1) * EMBEDDING_DIM), used);
    used += EMBEDDING_DIM;
    rows++;
    if (used === buffer.length) flush();
    return out;
  };
  return {
    model: { forward },
    close: () => {
      flush();
      closeSync(fd);
      return rows;
    },
  };
}

/**
 * A model that answers each step from the recorded embeddings (in order) and `heads` (a pipeline with the
 * judged heads): the window is the last 16 rows, a fresh stream's the pipeline's fresh one. Throws when the
 * stream asks for more steps than were recorded: then it is not the recorded audio.
 */
export function replayModel(heads: WakePipeline, file: string): { model: WakeTensorModel; left(): number } {
  const bytes = readFileSync(file);
  const rows = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const total = rows.length / EMBEDDING_DIM;
  const tail = new Float32Array(480);
  const mel = new Float32Array(76 * 32);
  let next = 0;
  const forward: Forward = async (inputs) => {
    if (next >= total) throw new Error(`${file} holds ${total} steps; the stream asked for more`);
    const given = inputs[3]!.data as Float32Array;
    const window = new Float32Array(HEAD_WINDOW * EMBEDDING_DIM);
    window.set((given.length === 0 ? heads.initialState().embeddings : given).subarray(EMBEDDING_DIM));
    window.set(
      rows.subarray(next * EMBEDDING_DIM, (next + 1) * EMBEDDING_DIM),
      (HEAD_WINDOW - 1) * EMBEDDING_DIM,
    );
    next++;
    const scores = await heads.score(window);
    return [
      { name: 'scores', data: scores, shape: [scores.length], type: 'float32' },
      { name: 'tail', data: tail, shape: [480], type: 'float32' },
      { name: 'mel', data: mel, shape: [76, 32], type: 'float32' },
      { name: 'embeddings', data: window, shape: [HEAD_WINDOW, EMBEDDING_DIM], type: 'float32' },
    ];
  };
  return { model: { forward }, left: () => total - next };
}

/** The files a recording was made over, in its order, beside it: a replay scans exactly these. */
export const filesOf = (file: string) => `${file}.files.json`;

/** Each file with the samples (16 kHz) the stream heard from it. */
export interface RecordedFile {
  file: string;
  samples: number;
}

export function recordedFiles(file: string): RecordedFile[] {
  if (!existsSync(filesOf(file))) throw new Error(`${file}: no ${filesOf(file)} beside it`);
  const all = JSON.parse(readFileSync(filesOf(file), 'utf8')) as RecordedFile[];
  // A recording stopped early may list a file whose last steps were not written yet: only the files whose every
  // step (and the padded last frame) is in the file are replayed.
  const rows = statSync(file).size / (EMBEDDING_DIM * 4);
  const out: RecordedFile[] = [];
  let samples = 0;
  for (const f of all) {
    samples += f.samples;
    if (Math.ceil(samples / 1280) > rows) break;
    out.push(f);
  }
  return out;
}

/** A replay need not decode again: the replayed model ignores the audio, the stream needs only its length. */
export function silenceOf(files: readonly RecordedFile[]): (path: string) => AsyncIterable<Float32Array> {
  const samples = new Map(files.map((f) => [f.file, f.samples]));
  return async function* (path) {
    let left = samples.get(path) ?? 0;
    while (left > 0) {
      const n = Math.min(left, 16000 * 10);
      yield new Float32Array(n);
      left -= n;
    }
  };
}

/** The sources' files interleaved by time: next comes the source with the smallest share of its hours taken, so
 *  any first part of a recording mixes music and speech as the whole does. */
export function roundRobin(clips: readonly { path: string; source: string; seconds: number }[]): string[] {
  const by = new Map<string, { files: { path: string; seconds: number }[]; total: number; taken: number }>();
  for (const c of clips) {
    const s = by.get(c.source) ?? { files: [], total: 0, taken: 0 };
    s.files.push(c);
    s.total += c.seconds;
    by.set(c.source, s);
  }
  const out: string[] = [];
  for (;;) {
    let next: { files: { path: string; seconds: number }[]; total: number; taken: number } | undefined;
    for (const s of by.values())
      if (s.files.length > 0 && (!next || s.taken / s.total < next.taken / next.total)) next = s;
    if (!next) return out;
    const f = next.files.shift()!;
    next.taken += f.seconds;
    out.push(f.path);
  }
}

/** Each source's clips in order up to its share of `seconds` (its share of the split's hours): a capped run
 *  hears every source in proportion, and an uncapped one hears everything. */
export function chooseRealBackground(clips: readonly RealClip[], seconds: number): RealClip[] {
  const total = clips.reduce((n, c) => n + c.seconds, 0);
  const scale = Math.min(1, seconds / total);
  const bySource = new Map<string, RealClip[]>();
  for (const c of clips) bySource.set(c.source, [...(bySource.get(c.source) ?? []), c]);
  const out: RealClip[] = [];
  for (const list of bySource.values()) {
    const quota = list.reduce((n, c) => n + c.seconds, 0) * scale;
    let taken = 0;
    for (const c of list) {
      if (taken >= quota) break;
      out.push(c);
      taken += c.seconds;
    }
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const [verb, out, hours] = process.argv.slice(2);
  if (verb !== 'record' || !out) {
    console.error('usage: wake-embeddings.ts record OUT.f32 [HOURS]');
    process.exit(1);
  }
  await ensureFeatureModels();
  const pipeline = await WakePipeline.load(
    { ...wakeFeatureGraphs(wakeCacheDir()), heads: [] },
    { threads: 1 },
  );
  const { clips } = realClips('eval', { roles: ['music', 'speech', 'ambient'] });
  const files = roundRobin(chooseRealBackground(clips, Number(hours ?? Number.POSITIVE_INFINITY) * 3600));
  // No head: each step answers one score of 0 for a placeholder keyword that can never fire (WakeStream needs one).
  const zero = Float32Array.of(0);
  const features: WakeTensorModel = {
    forward: async (i) =>
      (await pipeline.forward(i)).map((o) => (o.name === 'scores' ? { ...o, data: zero, shape: [1] } : o)),
  };
  const rec = recordingModel(features, resolve(out));
  let done = 0;
  const finished: RecordedFile[] = [];
  const report = await scanFiles(
    files,
    rec.model,
    [{ name: 'none', index: 0, threshold: 1, triggerFrames: 50, refractoryMs: 0 }],
    {
      decode: (p) => decodeAudioFile(p),
      onFile: (f) => {
        done += f.seconds;
        // Written as it goes: a recording stopped early still replays over the files it finished.
        finished.push({ file: f.file, samples: Math.round(f.seconds * 16000) });
        writeFileSync(filesOf(resolve(out)), `${JSON.stringify(finished)}\n`);
        if (Math.floor(done / 1800) > Math.floor((done - f.seconds) / 1800))
          console.log(`${new Date().toISOString()} recorded ${(done / 3600).toFixed(1)} h`);
      },
    },
  );
  const rows = rec.close();
  console.log(`recorded ${rows} steps over ${report.hours.toFixed(2)} h of ${files.length} files`);
  await pipeline.dispose();
}
