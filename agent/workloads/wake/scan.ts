// A wake-word model over recorded audio files, through the board's own streaming path (WakeStream: 80 ms frames,
// the pipeline state carried frame to frame, the warm-up, the keywords' trigger rules). The files are played one
// after another into ONE stream, as a board would hear a playlist: a short clip (a one-second word) still meets a
// warm model, and the warm-up is paid once. A detection belongs to the file its detecting frame ends in.
// `mnn-edge wake scan` and the benchmark's false accepts on real audio both count with this, so they agree.
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { AUDIO_EXTENSIONS } from '../../../lib/audio/decode-file.js';
import { errorMessage } from '../../../lib/errors.js';
import { type KeywordSetting, WAKE_FRAME_SAMPLES, WakeStream, type WakeTensorModel } from './stream.js';

const RATE = 16000;

export interface ScanDetection {
  file: string;
  /** Seconds from the start of that file to the end of the detecting frame. */
  atSeconds: number;
  keyword: string;
  score: number;
}

export interface ScanFile {
  file: string;
  /** Seconds of audio the stream heard from it (at 16 kHz). */
  seconds: number;
  /** Why it could not be read (in part or at all); the scan went on with the next file. */
  error?: string;
}

export interface ScanReport {
  files: ScanFile[];
  detections: ScanDetection[];
  /** Audio heard in all, seconds. */
  seconds: number;
  hours: number;
  /** Detections an hour per keyword over the audio heard (0 when none was heard). */
  perHour: Record<string, number>;
}

/** 16 kHz mono chunks of one file (lib/audio/decode-file.ts in the product; any source in tests). */
export type DecodeFile = (path: string) => AsyncIterable<Float32Array>;

export interface ScanOptions {
  decode: DecodeFile;
  /** Each detection as it happens (the CLI prints them while the scan runs). */
  onDetection?: (d: ScanDetection) => void;
  /** Each file when it is done. */
  onFile?: (f: ScanFile) => void;
}

/** The audio files named: a file as given, a directory walked (sorted, audio extensions only). */
export function listAudioFiles(paths: readonly string[]): { files: string[]; missing: ScanFile[] } {
  const files: string[] = [];
  const missing: ScanFile[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else if (st?.isFile() && AUDIO_EXTENSIONS.has(extname(name).toLowerCase())) files.push(p);
    }
  };
  for (const p of paths) {
    try {
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else files.push(p);
    } catch (err) {
      missing.push({ file: p, seconds: 0, error: `${p}: ${errorMessage(err)}` });
    }
  }
  return { files, missing };
}

export async function scanFiles(
  files: readonly string[],
  model: WakeTensorModel,
  keywords: readonly KeywordSetting[],
  options: ScanOptions,
): Promise<ScanReport> {
  const stream = new WakeStream(model, keywords);
  const report: ScanReport = { files: [], detections: [], seconds: 0, hours: 0, perHour: {} };
  // Where each file starts on the stream clock, for the detections of frames that end in it.
  let current = { file: '', start: 0 };
  const take = (frames: Awaited<ReturnType<WakeStream['push']>>) => {
    for (const f of frames)
      for (const d of f.detections) {
        const det: ScanDetection = {
          file: current.file,
          atSeconds: (d.endSample - current.start) / RATE,
          keyword: d.keyword,
          score: d.score,
        };
        report.detections.push(det);
        options.onDetection?.(det);
      }
  };
  for (const file of files) {
    current = { file, start: stream.samples };
    let error: string | undefined;
    try {
      for await (const chunk of options.decode(file)) take(await stream.push(chunk));
    } catch (err) {
      error = errorMessage(err);
    }
    const entry: ScanFile = { file, seconds: (stream.samples - current.start) / RATE };
    if (error !== undefined) entry.error = error;
    report.files.push(entry);
    options.onFile?.(entry);
  }
  // The last partial frame, padded with silence, so a file's last 80 ms are heard too.
  const rest = stream.samples % WAKE_FRAME_SAMPLES;
  if (rest > 0) take(await stream.push(new Float32Array(WAKE_FRAME_SAMPLES - rest)));
  report.seconds = report.files.reduce((s, f) => s + f.seconds, 0);
  report.hours = report.seconds / 3600;
  for (const k of keywords) {
    const n = report.detections.filter((d) => d.keyword === k.name).length;
    report.perHour[k.name] = report.hours > 0 ? n / report.hours : 0;
  }
  return report;
}
