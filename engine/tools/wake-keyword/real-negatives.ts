// Real recordings in the keyword generator's training (issue 45): windows of the TRAINING split's music and speech
// (real-sources.ts, cached by real-fetch.ts) played at the levels of a room, alone, under synthetic speech (a
// person talking over the radio) and over it (the TV louder than the person); the phrase over real background;
// and, for "computer", real speakers of the training split saying it. The evaluation split is never read here.
import { decodeAudioFile } from '../../../lib/audio/decode-file.js';
import { resample } from '../../../lib/audio/resample.js';
import type { WakePipeline } from '../../src/wake.js';
import {
  type Clip,
  nearMiss,
  phraseVariant,
  placeSpeech,
  positiveClip,
  randomBackground,
  randomSentence,
  randomVoice,
  type VoicePool,
} from './corpus.js';
import { decodeKept } from './decoded-cache.js';
import { type LabelledWindows, labelClip } from './features.js';
import { type RealClip, realClips } from './real-audio.js';
import { realAudioCacheDir } from './real-sources.js';
import { concat, mixInto, noise, pick, RATE, rmsOf, rng, say, scaleTo } from './speech.js';
import { telephoneBand } from './telephone-band.js';

const db = (d: number) => 10 ** (d / 20);

/** Decoded files, a few kept: windows are drawn again and again from the same long tracks. */
class DecodedFiles {
  readonly #kept = new Map<string, Float32Array>();
  #samples = 0;
  /** Up to `files` files and `samples` samples kept, the oldest dropped first. */
  constructor(
    readonly files = 6,
    readonly samples = Number.POSITIVE_INFINITY,
  ) {}
  async get(path: string, onDisk?: string): Promise<Float32Array> {
    const hit = this.#kept.get(path);
    if (hit) return hit;
    let audio: Float32Array;
    if (onDisk) audio = await decodeKept(path, onDisk);
    else {
      const parts: Float32Array[] = [];
      for await (const c of decodeAudioFile(path)) parts.push(c);
      audio = concat(parts);
    }
    this.#kept.set(path, audio);
    this.#samples += audio.length;
    while (this.#kept.size > this.files || (this.#samples > this.samples && this.#kept.size > 1)) {
      const oldest = this.#kept.keys().next().value!;
      this.#samples -= this.#kept.get(oldest)!.length;
      this.#kept.delete(oldest);
    }
    return audio;
  }
}

/** Picks a file with a chance proportional to its length, so hours (not file counts) weigh. */
function pickByLength(clips: readonly RealClip[], r: () => number): RealClip {
  const total = clips.reduce((n, c) => n + c.seconds, 0);
  let x = r() * total;
  for (const c of clips) {
    x -= c.seconds;
    if (x <= 0) return c;
  }
  return clips[clips.length - 1]!;
}

/**
 * How recipe 7 draws real windows (RealBackground.window): `speechShare` of them from the speech sources (the
 * rest from music and ambient sound), each source by its hours; a file shorter than the window is followed by
 * other files of the same source (several words, often in several languages, rather than one word looped);
 * `phoneShare` of the speech windows through an 8 kHz telephone band. Long files are decoded from a seek to the
 * window only. Without it, windows are drawn as recipe 6 drew them (its reproduce command gives its head).
 */
export interface RealMix {
  speechShare: number;
  phoneShare: number;
}

/** Files at most this long are decoded whole and kept (DecodedFiles); longer ones only the window's part. */
const WHOLE_FILE_SECONDS = 60;

export class RealBackground {
  readonly #clips: RealClip[];
  readonly #files: DecodedFiles;
  readonly #r: () => number;
  readonly #mix: RealMix | undefined;
  readonly #speech: RealClip[];
  readonly #other: RealClip[];
  readonly #bySource = new Map<string, RealClip[]>();
  /** The wake-audio cache whose `decoded/` tree keeps short files decoded (decoded-cache.ts); recipe 7 only. */
  readonly #cache: string | undefined;

  constructor(clips: RealClip[], seed: number, mix?: RealMix, cache = realAudioCacheDir()) {
    this.#clips = clips;
    this.#r = rng(seed);
    this.#mix = mix;
    this.#cache = mix ? cache : undefined;
    // Recipe 7 joins many short speech files (a word each): keeping up to 20 min of them decoded saves most of
    // the decoder starts, which are the cost of drawing a window.
    this.#files = mix ? new DecodedFiles(Number.POSITIVE_INFINITY, 20 * 60 * RATE) : new DecodedFiles();
    this.#speech = clips.filter((c) => c.role === 'speech');
    this.#other = clips.filter((c) => c.role !== 'speech');
    for (const c of clips) this.#bySource.set(c.source, [...(this.#bySource.get(c.source) ?? []), c]);
  }

  /** The training split's music and speech (less `exclude`'s sources: recipe 8's development part), or
   *  undefined with the reason when the cache has none. */
  static training(
    seed: number,
    mix?: RealMix,
    exclude: readonly string[] = [],
  ): { bed?: RealBackground; missing: string[] } {
    const all = realClips('train', { roles: ['music', 'speech', 'ambient'] });
    const clips = all.clips.filter((c) => !exclude.includes(c.source));
    const missing = all.missing.filter((id) => !exclude.includes(id));
    return clips.length > 0 ? { bed: new RealBackground(clips, seed, mix), missing } : { missing };
  }

  /** `seconds` of one real file (from a random point; a short file is looped), at `level` RMS. */
  async window(seconds: number, level: number): Promise<{ audio: Float32Array; label: string }> {
    if (this.#mix) return this.#mixedWindow(seconds, level, this.#mix);
    const r = this.#r;
    for (let tries = 0; ; tries++) {
      const c = pickByLength(this.#clips, r);
      let audio: Float32Array;
      try {
        audio = await this.#files.get(c.path);
      } catch (err) {
        if (tries < 5) continue; // an unreadable file: another one
        throw err;
      }
      const n = Math.round(seconds * RATE);
      const out = new Float32Array(n);
      if (audio.length === 0) continue;
      const from = audio.length > n ? Math.floor(r() * (audio.length - n)) : 0;
      for (let i = 0; i < n; i++) out[i] = audio[(from + i) % audio.length]!;
      // A window of silence (a pause in the track) stays silence rather than amplified noise.
      if (rmsOf(out) < 1e-4) continue;
      return { audio: scaleTo(out, level), label: `real ${c.source}` };
    }
  }

  async #mixedWindow(
    seconds: number,
    level: number,
    mix: RealMix,
  ): Promise<{ audio: Float32Array; label: string }> {
    const r = this.#r;
    const n = Math.round(seconds * RATE);
    for (let tries = 0; ; tries++) {
      const speech = this.#speech.length > 0 && (this.#other.length === 0 || r() < mix.speechShare);
      const first = pickByLength(speech ? this.#speech : this.#other, r);
      let out: Float32Array;
      try {
        out = await this.#fill(first, n, speech);
      } catch (err) {
        if (tries < 5) continue; // an unreadable file: another one
        throw err;
      }
      if (rmsOf(out) < 1e-4) continue;
      const phone = speech && r() < mix.phoneShare;
      if (phone) out = telephoneBand(out);
      return { audio: scaleTo(out, level), label: `real ${first.source}${phone ? ' (telephone band)' : ''}` };
    }
  }

  /** `n` samples from `first` on: its window, or (speech) it and other files of its source with short pauses. */
  async #fill(first: RealClip, n: number, speech: boolean): Promise<Float32Array> {
    const r = this.#r;
    const out = new Float32Array(n);
    let at = 0;
    let c = first;
    for (let files = 0; at < n && files < 64; files++) {
      const want = (n - at) / RATE;
      const audio =
        c.seconds <= WHOLE_FILE_SECONDS
          ? await this.#files.get(c.path, this.#cache)
          : await decodePart(c.path, r() * Math.max(0, c.seconds - want - 0.5), want);
      if (audio.length === 0) break;
      const from = audio.length > n - at ? Math.floor(r() * (audio.length - (n - at))) : 0;
      const take = Math.min(audio.length - from, n - at);
      out.set(audio.subarray(from, from + take), at);
      at += take;
      if (!speech) {
        // Music and ambient sound: a short file is looped, as recipe 6 did.
        for (let i = at; i < n; i++) out[i] = audio[(from + i - at + take) % audio.length]!;
        break;
      }
      at += Math.round((0.1 + 0.5 * r()) * RATE); // a pause between two speakers' words
      c = pick(r, this.#bySource.get(first.source) ?? [first]);
    }
    return out;
  }
}

/** Part of a long file, decoded from a seek (decodeAudioFile's `part`). */
async function decodePart(path: string, from: number, seconds: number): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  for await (const c of decodeAudioFile(path, { part: { from, seconds } })) parts.push(c);
  return concat(parts);
}

/**
 * Negative clips up to `seconds` over real background: a third real audio alone at -45…-20 dBFS; a third a
 * synthetic sentence (a quarter of them near misses of `phrase`) at -30…-10 dBFS over real audio 6–20 dB below
 * it; a third real audio 0–10 dB above such a sentence.
 */
export async function realNegatives(
  bed: RealBackground,
  seconds: number,
  seed: number,
  pool: VoicePool,
  phrase: string,
): Promise<Clip[]> {
  const r = rng(seed);
  const out: Clip[] = [];
  let total = 0;
  while (total < seconds * RATE) {
    const u = r();
    let clip: Clip;
    if (u < 1 / 3) {
      const w = await bed.window(3 + 7 * r(), db(-45 + 25 * r()));
      clip = { audio: w.audio, label: w.label };
    } else {
      const text = r() < 0.25 ? nearMiss(r, phrase) : randomSentence(r);
      const speech = placeSpeech(await say(text, randomVoice(r, pool)), r, 0.3 + r(), 0.3);
      const speechLevel = rmsOf(speech.audio);
      const under = u < 2 / 3;
      const gap = under ? -(6 + 14 * r()) : 10 * r();
      const w = await bed.window(speech.audio.length / RATE, speechLevel * db(gap));
      mixInto(speech.audio, w.audio);
      clip = { audio: speech.audio, label: `${under ? 'speech over' : 'speech under'} ${w.label}: ${text}` };
    }
    out.push(clip);
    total += clip.audio.length;
  }
  return out;
}

/** Positives over real background 5–20 dB below the phrase (a radio on while someone calls the board). */
export async function overRealBackground(bed: RealBackground, clip: Clip, r: () => number): Promise<Clip> {
  const level = rmsOf(clip.audio) * db(-(5 + 15 * r()));
  const w = await bed.window(clip.audio.length / RATE, level);
  const audio = Float32Array.from(clip.audio);
  mixInto(audio, w.audio);
  return { ...clip, audio, label: `${clip.label} over ${w.label}` };
}

/**
 * Where speech ends in a real keyword clip (its recording has no marks): the end of the last 10 ms block within
 * 30 dB of the loudest block. Real clips hold the word and up to a second of room sound around it.
 */
export function speechEnd(audio: Float32Array): number {
  const block = RATE / 100;
  const levels: number[] = [];
  for (let at = 0; at + block <= audio.length; at += block)
    levels.push(rmsOf(audio.subarray(at, at + block)));
  const peak = Math.max(0, ...levels);
  for (let i = levels.length - 1; i >= 0; i--) if (levels[i]! >= peak * db(-30)) return (i + 1) * block;
  return audio.length;
}

/** Real speakers of the training split saying `phrase`, 1.2–2 s after silence, their end found by speechEnd. */
export async function realPositives(phrase: string, seed: number): Promise<Clip[]> {
  const { clips } = realClips('train', { roles: ['keyword'], phrase });
  const r = rng(seed);
  const out: Clip[] = [];
  for (const c of clips) {
    const parts: Float32Array[] = [];
    for await (const p of decodeAudioFile(c.path)) parts.push(p);
    const speech = concat(parts);
    const lead = Math.round((1.2 + 0.8 * r()) * RATE);
    out.push({
      audio: concat([new Float32Array(lead), speech]),
      keywordEnd: lead + speechEnd(speech),
      label: `real ${c.source} ${c.speaker ?? ''}`,
    });
  }
  return out;
}

/**
 * One more take of a real speaker's clip (recipe 6): played 0.85–1.15 times as fast (speed perturbation: pitch
 * and formants move together), its word at -30…-10 dBFS, 1.2–2 s after the clip starts, over synthetic room
 * noise or (when `bed` is given, half the time) real background 5–20 dB below it. A few dozen real clips then
 * weigh like hundreds without being the same windows again and again.
 */
export async function augmentedTake(clip: Clip, r: () => number, bed?: RealBackground): Promise<Clip> {
  const speed = 0.85 + 0.3 * r();
  const start = Math.max(0, (clip.keywordEnd ?? clip.audio.length) - Math.round(2.5 * RATE));
  // Only the real recording after its lead of silence, resampled from a rate `speed` times RATE.
  const speech = resample(clip.audio.subarray(firstSound(clip.audio, start)), Math.round(RATE * speed), RATE);
  const end = speechEnd(speech);
  const peak = rmsOf(speech.subarray(0, end));
  const level = 10 ** ((-30 + 20 * r()) / 20);
  const lead = Math.round((1.2 + 0.8 * r()) * RATE);
  const audio = new Float32Array(lead + speech.length);
  for (let i = 0; i < speech.length; i++) audio[lead + i] = (speech[i]! * level) / (peak || 1);
  const take: Clip = { audio, keywordEnd: lead + end, label: `${clip.label} @${speed.toFixed(2)}` };
  if (bed && r() < 0.5) return overRealBackground(bed, take, r);
  const bg = randomBackground(r);
  if (bg.kind !== 'silence') mixInto(audio, noise(bg.kind, audio.length, bg.level, r));
  return take;
}

/** The first sample at or after `from` that is not the silent lead realPositives put before a clip. */
function firstSound(audio: Float32Array, from: number): number {
  for (let i = from; i < audio.length; i++) if (audio[i] !== 0) return i;
  return from;
}

export interface RealRecipe {
  phrase: string;
  seed: number;
  /** Minutes of negatives over real background (0: none). */
  realMinutes: number;
  /** Synthetic positives placed over real background. */
  realBackgroundPositives: number;
  /** Augmented takes (augmentedTake) of each real speaker's clip, beside the clean one and the one over real
   *  background; 0 for those two only. */
  realPositiveTakes: number;
  /** Recipe 7's draw of real windows (RealMix); undefined: recipe 6's. */
  realMix?: RealMix;
  /** Recipe 8: sources of the training split kept out of training as its development part (dev-split.ts). */
  realHeldOutSources?: readonly string[];
  log: (line: string) => void;
}

/** Step 2c: the real-audio part of the training corpus, into `windows`. Skipped, with a line, without a cache. */
export async function realCorpus(
  pipeline: WakePipeline,
  o: RealRecipe,
  pool: VoicePool,
  windows: LabelledWindows,
): Promise<{ positiveClips: number; negativeSamples: number }> {
  if (o.realMinutes <= 0 && o.realBackgroundPositives <= 0) return { positiveClips: 0, negativeSamples: 0 };
  const { bed, missing } = RealBackground.training(o.seed + 8, o.realMix, o.realHeldOutSources);
  if (!bed) {
    o.log(
      `  no real training audio in the cache (${missing.join(', ')}): run engine/tools/wake-keyword/real-fetch.ts`,
    );
    return { positiveClips: 0, negativeSamples: 0 };
  }
  if (missing.length > 0) o.log(`  real sources missing from the cache: ${missing.join(', ')}`);
  o.log(
    `  ${o.realMinutes} min of negatives and ${o.realBackgroundPositives} positives over real recordings${o.realMix ? ` (speech ${Math.round(o.realMix.speechShare * 100)} % of the windows, ${Math.round(o.realMix.phoneShare * 100)} % of those in a telephone band)` : ''}`,
  );
  const neg = await realNegatives(bed, o.realMinutes * 60, o.seed + 9, pool, o.phrase);
  o.log(`  drew ${neg.length} clips over real recordings`);
  for (const c of neg) await labelClip(pipeline, c, windows);
  o.log('  features of the negatives over real recordings');
  const r = rng(o.seed + 10);
  let positiveClips = 0;
  for (let i = 0; i < o.realBackgroundPositives; i++) {
    const clip = await positiveClip(phraseVariant(o.phrase, i), randomVoice(r, pool), r);
    await labelClip(pipeline, await overRealBackground(bed, clip, r), windows);
    positiveClips++;
  }
  const speakers = await realPositives(o.phrase, o.seed + 11);
  for (const c of speakers) {
    await labelClip(pipeline, c, windows);
    // The few real speakers also over real background, so their voices are not the only clean positives.
    await labelClip(pipeline, await overRealBackground(bed, c, r), windows);
    for (let k = 0; k < o.realPositiveTakes; k++)
      await labelClip(pipeline, await augmentedTake(c, r, bed), windows);
  }
  if (speakers.length > 0)
    o.log(
      `  ${speakers.length} real speakers' clips of "${o.phrase}" (training split), ${2 + o.realPositiveTakes} takes each`,
    );
  return {
    positiveClips: positiveClips + (2 + o.realPositiveTakes) * speakers.length,
    negativeSamples: neg.reduce((n, c) => n + c.audio.length, 0),
  };
}
