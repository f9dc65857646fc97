// The real recordings real-fetch.ts put into the cache, by split and role: what the keyword generator mixes into
// its negatives (training split) and what the benchmark judges on (evaluation split). A source that is missing
// is left out with its name; the split's minimums say whether what is left is still enough.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  REAL_SOURCES,
  type RealIndex,
  type RealRole,
  type RealSplit,
  realAudioCacheDir,
} from './real-sources.js';

/** Held-out background audio the false-accept figure needs: at 0.5 an hour, 8 h make it a count of 4. */
export const EVAL_BACKGROUND_MIN_HOURS = 8;
/** Real "computer" clips the false-reject figure needs on held-out speakers (5 % of 100 is 5 clips). */
export const EVAL_KEYWORD_MIN_CLIPS = 100;
/** Training background: enough hours that windows drawn from it rarely repeat. */
export const TRAIN_BACKGROUND_MIN_HOURS = 4;

export interface RealClip {
  /** Absolute path of the audio file. */
  path: string;
  source: string;
  role: RealRole;
  seconds: number;
  speaker?: string;
  phrase?: string;
}

export interface RealSelection {
  clips: RealClip[];
  /** Sources of the split that are not in the cache (not fetched, or failed). */
  missing: string[];
}

function readIndex(cache: string, id: string): RealIndex | undefined {
  const p = join(cache, 'audio', id, 'index.json');
  if (!existsSync(p)) return undefined;
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as RealIndex;
  } catch {
    return undefined;
  }
}

/** The cached clips of one split, optionally of some roles or one phrase. */
export function realClips(
  split: RealSplit,
  filter: { roles?: readonly RealRole[]; phrase?: string } = {},
  cache = realAudioCacheDir(),
): RealSelection {
  const clips: RealClip[] = [];
  const missing: string[] = [];
  for (const s of REAL_SOURCES) {
    if (filter.roles && !filter.roles.includes(s.role)) continue;
    const index = readIndex(cache, s.id);
    if (!index) {
      // A source whose files are all in the other split is not missing from this one.
      const other = s.kind === 'git' && (s.otherSplitSpeakers?.length ?? 0) > 0;
      if (s.split === split || other) missing.push(s.id);
      continue;
    }
    if (filter.phrase !== undefined && index.phrase !== filter.phrase) continue;
    for (const f of index.files) {
      if (f.split !== split || f.seconds <= 0) continue;
      clips.push({
        path: join(cache, 'audio', s.id, f.path),
        source: s.id,
        role: index.role,
        seconds: f.seconds,
        ...(f.speaker ? { speaker: f.speaker } : {}),
        ...(index.phrase ? { phrase: index.phrase } : {}),
      });
    }
  }
  return { clips, missing };
}

const hours = (clips: readonly RealClip[]) => clips.reduce((n, c) => n + c.seconds, 0) / 3600;

/** Hours and clips per split and role, and whether each split meets its minimum. */
export function splitSummary(cache = realAudioCacheDir()): { lines: string[]; meetsMinimums: boolean } {
  const lines: string[] = [`cache ${cache}`];
  let ok = true;
  for (const split of ['train', 'eval'] as const) {
    const { clips, missing } = realClips(split, {}, cache);
    const background = clips.filter((c) => c.role !== 'keyword');
    const bySource = new Map<string, RealClip[]>();
    for (const c of clips) bySource.set(c.source, [...(bySource.get(c.source) ?? []), c]);
    lines.push(`${split}:`);
    for (const [id, cs] of bySource)
      lines.push(
        `  ${id.padEnd(26)} ${cs[0]!.role.padEnd(8)} ${String(cs.length).padStart(5)} files ${hours(cs).toFixed(2).padStart(6)} h`,
      );
    const keyword = clips.filter((c) => c.role === 'keyword');
    const bg = hours(background);
    const min = split === 'eval' ? EVAL_BACKGROUND_MIN_HOURS : TRAIN_BACKGROUND_MIN_HOURS;
    const computer = keyword.filter((c) => c.phrase === 'computer').length;
    lines.push(
      `  background ${bg.toFixed(2)} h (music ${hours(background.filter((c) => c.role === 'music')).toFixed(2)}, speech ${hours(background.filter((c) => c.role === 'speech')).toFixed(2)}; minimum ${min} h): ${bg >= min ? 'ok' : 'SHORT'}`,
    );
    lines.push(
      `  keyword clips: ${keyword.length} (${computer} "computer", ${keyword.length - computer} "hey computer")`,
    );
    if (bg < min) ok = false;
    if (split === 'eval' && computer < EVAL_KEYWORD_MIN_CLIPS) {
      lines.push(`  real "computer" clips ${computer} < ${EVAL_KEYWORD_MIN_CLIPS}: SHORT`);
      ok = false;
    }
    if (missing.length > 0) lines.push(`  missing: ${missing.join(', ')}`);
  }
  return { lines, meetsMinimums: ok };
}
