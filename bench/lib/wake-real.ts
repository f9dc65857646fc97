// bench/wake on real recordings (issue 45), the evaluation split of engine/tools/wake-keyword/real-sources.ts as
// real-fetch.ts cached it: false rejects on real speakers saying the model's phrase (apart from the synthetic
// voices' figure), and false accepts an hour on the held-out music and speech, counted with the same scanFiles
// as `mnn-edge wake scan` (one stream across the files, the board's WakeStream), so the two agree on the same audio.
import { scanFiles } from '../../agent/workloads/wake/scan.js';
import type { KeywordSetting, WakeTensorModel } from '../../agent/workloads/wake/stream.js';
import { EVAL_BACKGROUND_MIN_HOURS, realClips } from '../../engine/tools/wake-keyword/real-audio.js';
import { decodeAudioFile } from '../../lib/audio/decode-file.js';
import { bar, check, fmt } from './stats.js';
import { chooseRealBackground, type RecordedFile, silenceOf } from './wake-embeddings.js';

/** Silence before each real keyword clip: the stream's warm-up (12 frames) is over before the speaker starts. */
const LEAD_SECONDS = 1.2;

async function* withLead(path: string): AsyncGenerator<Float32Array> {
  yield new Float32Array(Math.round(LEAD_SECONDS * 16000));
  yield* decodeAudioFile(path);
  yield new Float32Array(16000);
}

/** Embeddings recorded once over the held-out audio (wake-embeddings.ts), replayed through the judged heads. */
export interface Replay {
  model: WakeTensorModel;
  files: RecordedFile[];
  from: string;
}

export interface RealFigures {
  falseRejectRate?: number;
  falseAcceptsPerHour?: number;
  falseAccepts?: number;
  hours: number;
}

/**
 * False rejects: each real clip of `phrase` on a fresh stream (1.2 s of silence, the clip, 1 s of silence), missed
 * when no frame detects. Printed per source, then in all, with the speakers it covers.
 */
export async function realFalseRejects(
  model: () => WakeTensorModel,
  keyword: KeywordSetting,
  phrase: string,
  log: (line: string) => void,
): Promise<number | undefined> {
  const { clips, missing } = realClips('eval', { roles: ['keyword'], phrase });
  if (missing.length > 0)
    log(
      `  (real sources not in the cache: ${missing.join(', ')}; run engine/tools/wake-keyword/real-fetch.ts)`,
    );
  if (clips.length === 0) {
    log(`SKIP false rejects on real speakers: no held-out real "${phrase}" clips in the cache`);
    return undefined;
  }
  const bySource = new Map<string, { n: number; missed: number; speakers: Set<string> }>();
  let missed = 0;
  for (const c of clips) {
    const r = await scanFiles([c.path], model(), [keyword], { decode: withLead });
    const s = bySource.get(c.source) ?? { n: 0, missed: 0, speakers: new Set<string>() };
    s.n++;
    if (c.speaker) s.speakers.add(c.speaker);
    if (r.detections.length === 0) {
      s.missed++;
      missed++;
    }
    bySource.set(c.source, s);
  }
  for (const [id, s] of bySource)
    log(
      `  real "${phrase}", ${id} (eval split${s.speakers.size ? `, speakers ${[...s.speakers].join(', ')}` : ', speakers not named by the source'}): ${s.missed}/${s.n} missed`,
    );
  const rate = (missed / clips.length) * 100;
  log(bar('false rejects, real', rate, 20, `${fmt(rate, 1)} % (${missed}/${clips.length})`));
  log(check(`false rejects (real speakers, "${phrase}")`, rate, '%', '<= 5', rate <= 5));
  return rate;
}

/**
 * False accepts an hour on the held-out real background (music and speech), at most `maxHours` of it (the sources
 * interleaved, so a cap still covers each); counted by scanFiles, as `wake scan` counts; per keyword, all of them
 * on one stream.
 */
export async function realFalseAccepts(
  model: WakeTensorModel,
  keywords: readonly KeywordSetting[],
  maxHours: number,
  log: (line: string) => void,
  replay?: Replay,
): Promise<Map<string, RealFigures>> {
  const { clips } = realClips('eval', { roles: ['music', 'speech', 'ambient'] });
  if (clips.length === 0) {
    log('SKIP false accepts on real audio: no held-out real audio in the cache');
    return new Map(keywords.map((k) => [k.name, { hours: 0 }]));
  }
  // A replay scans the files its embeddings were recorded over (wake-embeddings.ts), in that order.
  const recorded = replay && new Set(replay.files.map((f) => f.file));
  const chosen = recorded
    ? replay.files.map((f) => clips.find((c) => c.path === f.file)!).filter((c) => c !== undefined)
    : chooseRealBackground(clips, maxHours * 3600);
  if (replay) {
    if (chosen.length !== replay.files.length)
      throw new Error('the recorded embeddings name files that are not in the evaluation split');
    log(
      `  (the held-out audio's embeddings replayed from ${replay.from}: ${chosen.length} files, recorded by bench/lib/wake-embeddings.ts)`,
    );
  }
  // Every keyword on the same stream: the features are computed once, as on a board with several keywords.
  let done = 0;
  const report = await scanFiles(
    chosen.map((c) => c.path),
    replay?.model ?? model,
    keywords,
    {
      decode: replay ? silenceOf(replay.files) : (p) => decodeAudioFile(p),
      onFile: (f) => {
        done += f.seconds;
        if (Math.floor(done / 1800) > Math.floor((done - f.seconds) / 1800))
          log(`  real audio scanned: ${fmt(done / 3600, 1)} h`);
      },
    },
  );
  const sourceOf = new Map(chosen.map((c) => [c.path, c.source]));
  const per = new Map<string, { seconds: number; n: Map<string, number> }>();
  for (const f of report.files) {
    const id = sourceOf.get(f.file) ?? '?';
    const s = per.get(id) ?? { seconds: 0, n: new Map<string, number>() };
    s.seconds += f.seconds;
    per.set(id, s);
  }
  for (const d of report.detections) {
    const n = per.get(sourceOf.get(d.file) ?? '?')!.n;
    n.set(d.keyword, (n.get(d.keyword) ?? 0) + 1);
  }
  for (const [id, s] of per)
    log(
      `  real, eval split, ${id} (${fmt(s.seconds / 3600, 2)} h): ${keywords.map((k) => `${k.name} ${s.n.get(k.name) ?? 0}`).join(', ')}`,
    );
  const unread = report.files.filter((f) => f.error).length;
  if (unread > 0)
    log(`  ${unread} file(s) could not be read (first: ${report.files.find((f) => f.error)!.error})`);
  const out = new Map<string, RealFigures>();
  for (const k of keywords) {
    const perHour = report.perHour[k.name] ?? 0;
    const n = report.detections.filter((d) => d.keyword === k.name).length;
    log(
      bar(
        `false accepts / h, real, ${k.name}`,
        perHour,
        5,
        `${fmt(perHour, 2)} / h (${n} in ${fmt(report.hours, 2)} h)`,
      ),
    );
    log(check(`false accepts per hour (real, held out), ${k.name}`, perHour, '/h', '<= 0.5', perHour <= 0.5));
    out.set(k.name, { falseAcceptsPerHour: perHour, falseAccepts: n, hours: report.hours });
  }
  if (report.hours < EVAL_BACKGROUND_MIN_HOURS)
    log(
      `  (${fmt(report.hours, 2)} h is under the ${EVAL_BACKGROUND_MIN_HOURS} h the target needs: one false accept is ${fmt(1 / report.hours, 2)} an hour)`,
    );
  return out;
}
