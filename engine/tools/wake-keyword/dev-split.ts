// The development part of the real training split (recipe 8, issue 45). Until recipe 7 the shipped rule was
// chosen on synthetic audio only (20 min of held-out espeak-ng voices), and the real evaluation split was the
// first real audio a rule met; choosing anything on that split would make its figure a fit, not a measure. Whole
// sources of the training split are therefore held out of training (never drawn for negatives, never mined) and
// scored by the generator with the head it trained: their false accepts join the validation set the rule is
// chosen on (rule-choice.ts). The evaluation split stays unread here, as in real-negatives.ts.
import { decodeAudioFile } from '../../../lib/audio/decode-file.js';
import type { WakePipeline } from '../../src/wake.js';
import type { TriggerRule } from '../../src/wake-trigger.js';
import { decodeKept } from './decoded-cache.js';
import { detectionsOf, detectStream } from './features.js';
import { type RealClip, realClips } from './real-audio.js';
import { realAudioCacheDir } from './real-sources.js';
import { concat, RATE } from './speech.js';

/**
 * The development sources: KLettres (letters and syllables spoken in some twenty languages, Czech among them) and
 * KTuberling (words in many languages) as speech, singularity's and flare's music; 3.19 h, 44 % speech, near the
 * evaluation split's 42 %. Chosen by what they are, before any recipe-8 figure existed: foreign-language speech
 * is where recipe 7 still woke (Czech dialogue, phone prompts), and these two are the training split's
 * multilingual speech apart from Tux Paint and mimic3, which stay in training as its larger share.
 */
export const DEV_SOURCES: readonly string[] = ['klettres', 'ktuberling', 'singularity-music', 'flare-audio'];

/** Files up to this long are read through the decoded cache (decoded-cache.ts); longer ones decoded each time. */
const KEPT_SECONDS = 60;
/** Dev audio is scored in streams of about this length (one state carried across the files of each). */
const STREAM_SECONDS = 600;

/** The training split's background clips, less the development sources: what recipe 8 trains and mines on. */
export function withoutDev(clips: readonly RealClip[]): RealClip[] {
  return clips.filter((c) => !DEV_SOURCES.includes(c.source));
}

/** The development clips (music and speech of DEV_SOURCES), in a fixed order. */
export function devClips(): { clips: RealClip[]; missing: string[] } {
  const { clips, missing } = realClips('train', { roles: ['music', 'speech', 'ambient'] });
  return {
    clips: clips.filter((c) => DEV_SOURCES.includes(c.source)).sort((a, b) => a.path.localeCompare(b.path)),
    missing: missing.filter((id) => DEV_SOURCES.includes(id)),
  };
}

export interface DevScores {
  /** Per-frame scores of each stream, and the source it came from. */
  streams: Array<{ source: string; scores: Float32Array[] }>;
  hours: number;
}

async function decodeWhole(c: RealClip): Promise<Float32Array> {
  if (c.seconds <= KEPT_SECONDS) return decodeKept(c.path, realAudioCacheDir());
  const parts: Float32Array[] = [];
  for await (const p of decodeAudioFile(c.path)) parts.push(p);
  return concat(parts);
}

/** Scores the development audio with `pipeline`'s keyword 0: each source's files one after another, as a board
 *  next to a radio would hear them, in streams of about ten minutes. Undefined, with the reason, without it. */
export async function devScores(
  pipeline: WakePipeline,
  rule: TriggerRule,
  log: (line: string) => void,
): Promise<DevScores | undefined> {
  const { clips, missing } = devClips();
  if (clips.length === 0) {
    log(`  no development audio in the cache (${DEV_SOURCES.join(', ')}): run real-fetch.ts`);
    return undefined;
  }
  if (missing.length > 0) log(`  development sources missing from the cache: ${missing.join(', ')}`);
  const out: DevScores = { streams: [], hours: 0 };
  for (const source of DEV_SOURCES) {
    let parts: Float32Array[] = [];
    let samples = 0;
    const flush = async () => {
      if (samples === 0) return;
      const { scores } = await detectStream(pipeline, concat(parts), rule, 0, true);
      out.streams.push({ source, scores });
      out.hours += samples / RATE / 3600;
      parts = [];
      samples = 0;
    };
    for (const c of clips.filter((x) => x.source === source)) {
      const audio = await decodeWhole(c);
      parts.push(audio);
      samples += audio.length;
      if (samples >= STREAM_SECONDS * RATE) await flush();
    }
    await flush();
  }
  log(`  scored ${out.hours.toFixed(2)} h of development audio (${DEV_SOURCES.join(', ')})`);
  return out;
}

/** False accepts of `rule` on the development audio, per source. */
export function devFalseAccepts(dev: DevScores, rule: TriggerRule): Record<string, number> {
  const bySource: Record<string, number> = {};
  for (const s of dev.streams)
    bySource[s.source] = (bySource[s.source] ?? 0) + detectionsOf(s.scores, rule).length;
  return bySource;
}
