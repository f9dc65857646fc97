// Clips in RHVoice's voices (rhvoice.ts): positives for training (its training voices) and for judging (its
// held-out voices, bench/wake), negatives for training, placed as the espeak-ng and flite/festival clips are.
import type { WakePipeline } from '../../src/wake.js';
import { type Clip, type SpeakTake, spokenNegatives, spokenPositives } from './corpus.js';
import { type LabelledWindows, labelClip } from './features.js';
import { Rhvoice, randomRhvoiceTake, rhvoiceMissing, rhvoiceVoices, takeLabel } from './rhvoice.js';

/** What of a keyword recipe the RHVoice step reads: how many of its clips the training takes (its share). */
export interface RhvoiceShare {
  phrase: string;
  seed: number;
  /** Positives in RHVoice's training voices; 0 leaves RHVoice out. */
  rhvoicePositives: number;
  /** Minutes of negatives in those voices. */
  rhvoiceMinutes: number;
  log: (line: string) => void;
}

/**
 * `--rhvoice N`: N positives in RHVoice's training voices and, at recipe 5's ratio for flite and festival
 * (1,200 phrases to 20 minutes), N/60 minutes of negatives; 0 leaves them out.
 */
export function parseRhvoiceShare(value: string): Pick<RhvoiceShare, 'rhvoicePositives' | 'rhvoiceMinutes'> {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0)
    throw new Error(`--rhvoice needs a whole number of positives (0: no RHVoice voices), not "${value}"`);
  return { rhvoicePositives: n, rhvoiceMinutes: Math.round(n / 60) };
}

/** RHVoice's `voices` as the corpus's voice: each take in one, at its own rate, pitch and speed. */
function rhvoiceSpeaker(engine: Rhvoice, voices: readonly string[]): SpeakTake {
  return async (text, r) => {
    const take = randomRhvoiceTake(r, voices);
    return { speech: await engine.say(text, take), label: takeLabel(take) };
  };
}

/** `count` positives of `phrase` in `voices`, each at its own rate, pitch and speed. */
export function rhvoicePositives(
  engine: Rhvoice,
  voices: readonly string[],
  phrase: string,
  count: number,
  seed: number,
): Promise<Clip[]> {
  return spokenPositives(rhvoiceSpeaker(engine, voices), phrase, count, seed);
}

/** `seconds` of negatives in `voices`: sentences (a quarter near misses of `phrase`), a fifth noise. */
export function rhvoiceNegatives(
  engine: Rhvoice,
  voices: readonly string[],
  phrase: string,
  seconds: number,
  seed: number,
): Promise<Clip[]> {
  return spokenNegatives(rhvoiceSpeaker(engine, voices), phrase, seconds, seed);
}

/**
 * The training corpus's RHVoice step: its share of positives and negatives in the training voices, into
 * `windows`. Off, with one line saying why, when the recipe asks for none or the engine is not built here.
 */
export async function rhvoiceCorpus(
  pipeline: WakePipeline,
  o: RhvoiceShare,
  windows: LabelledWindows,
  missing: () => string | undefined = () => rhvoiceMissing(rhvoiceVoices('train')),
): Promise<{ positiveClips: number; negativeSamples: number }> {
  if (o.rhvoicePositives <= 0 && o.rhvoiceMinutes <= 0) return { positiveClips: 0, negativeSamples: 0 };
  const why = missing();
  if (why) {
    o.log(`  RHVoice voices off: ${why}`);
    return { positiveClips: 0, negativeSamples: 0 };
  }
  const voices = rhvoiceVoices('train');
  o.log(
    `  ${o.rhvoicePositives} positives and ${o.rhvoiceMinutes} min of negatives in RHVoice's ${voices.join(', ')}`,
  );
  const engine = new Rhvoice();
  try {
    const pos = await rhvoicePositives(engine, voices, o.phrase, o.rhvoicePositives, o.seed + 20);
    for (const c of pos) await labelClip(pipeline, c, windows);
    const neg = await rhvoiceNegatives(engine, voices, o.phrase, o.rhvoiceMinutes * 60, o.seed + 21);
    for (const c of neg) await labelClip(pipeline, c, windows);
    return { positiveClips: pos.length, negativeSamples: neg.reduce((n, c) => n + c.audio.length, 0) };
  } finally {
    engine.dispose();
  }
}
