// The training corpus of the keyword generator (make-keyword.ts), steps 1 and 2: synthetic positives and
// negatives in the training voices, the same in flite's and festival's speakers (other-voices.ts), and the real
// recordings of the training split (real-negatives.ts), all labelled into windows through the real pipeline.
import type { WakePipeline } from '../../src/wake.js';
import {
  type Clip,
  negativeCorpus,
  phraseVariant,
  positiveClip,
  randomVoice,
  type VoicePool,
} from './corpus.js';
import { type LabelledWindows, labelClip } from './features.js';
import { OtherVoices, otherVoiceNegatives, otherVoicePositives } from './other-voices.js';
import { type RealRecipe, realCorpus } from './real-negatives.js';
import { type RhvoiceShare, rhvoiceCorpus } from './rhvoice-corpus.js';
import { RATE, rng } from './speech.js';

/** What of a keyword recipe (make-keyword.ts KeywordOptions) the training corpus reads. */
export interface CorpusRecipe extends RealRecipe, RhvoiceShare {
  positives: number;
  negativeMinutes: number;
  /** Made-up espeak-ng timbres among the training voices (for the log line). */
  timbres: number;
  otherVoicePositives: number;
  otherVoiceMinutes: number;
}

/** Whether a recipe speaks through flite and festival (other-voices.ts) at all. */
export function usesOtherVoices(o: Pick<CorpusRecipe, 'otherVoicePositives' | 'otherVoiceMinutes'>): boolean {
  return o.otherVoicePositives > 0 || o.otherVoiceMinutes > 0;
}

export async function positives(
  phrase: string,
  n: number,
  seed: number,
  pool: VoicePool,
  log?: (line: string) => void,
): Promise<Clip[]> {
  const r = rng(seed);
  const out: Clip[] = [];
  for (let i = 0; i < n; i++) {
    out.push(await positiveClip(phraseVariant(phrase, i), randomVoice(r, pool), r));
    if (i % 500 === 499) log?.(`  synthesised ${i + 1}/${n} positives`);
  }
  return out;
}

export interface TrainingCorpus {
  windows: LabelledWindows;
  positiveClips: number;
  negativeSeconds: number;
  /** Where the real-audio negatives are in `windows.negatives` (hard-negatives.ts mines them). */
  realNegatives: { start: number; end: number };
}

/** Steps 1 and 2: the training clips in `pool`'s voices, labelled into windows through the real pipeline. */
export async function trainingCorpus(
  pipeline: WakePipeline,
  o: CorpusRecipe,
  pool: VoicePool,
): Promise<TrainingCorpus> {
  const windows: LabelledWindows = { positives: [], negatives: [] };
  o.log(
    `[1/4] ${o.positives} positive clips of "${o.phrase}" (${pool.accents.length} accents × ${pool.variants.length} timbres, ${o.timbres} of them made up)`,
  );
  const pos = await positives(o.phrase, o.positives, o.seed, pool, o.log);
  for (const [i, c] of pos.entries()) {
    await labelClip(pipeline, c, windows);
    if (i % 100 === 99) o.log(`  features of ${i + 1}/${pos.length} positives`);
  }
  o.log(`[2/4] ${o.negativeMinutes} min of negative speech, babble, noise and silence`);
  let lastMinute = -1;
  // The negatives speak in the same voices, made-up ones included: a timbre alone must not say "keyword".
  const neg = await negativeCorpus(
    o.negativeMinutes * 60,
    o.seed + 1,
    pool,
    (done) => {
      const minute = Math.floor(done / 60);
      if (minute !== lastMinute && minute % 5 === 0)
        o.log(`  synthesised ${minute}/${o.negativeMinutes} min`);
      lastMinute = minute;
    },
    o.phrase,
  );
  for (const c of neg) await labelClip(pipeline, c, windows);
  const other = await otherVoiceCorpus(pipeline, o, windows);
  const rhvoice = await rhvoiceCorpus(pipeline, o, windows);
  const realStart = windows.negatives.length;
  const real = await realCorpus(pipeline, o, pool, windows);
  return {
    realNegatives: { start: realStart, end: windows.negatives.length },
    windows,
    positiveClips: pos.length + other.positiveClips + rhvoice.positiveClips + real.positiveClips,
    negativeSeconds:
      (neg.reduce((n, c) => n + c.audio.length, 0) +
        other.negativeSamples +
        rhvoice.negativeSamples +
        real.negativeSamples) /
      RATE,
  };
}

/** Step 2b: positives and negatives in flite's and festival's speakers, into `windows`. */
async function otherVoiceCorpus(
  pipeline: WakePipeline,
  o: CorpusRecipe,
  windows: LabelledWindows,
): Promise<{ positiveClips: number; negativeSamples: number }> {
  if (!usesOtherVoices(o)) return { positiveClips: 0, negativeSamples: 0 };
  o.log(
    `  ${o.otherVoicePositives} positives and ${o.otherVoiceMinutes} min of negatives in flite's and festival's speakers`,
  );
  const voices = new OtherVoices();
  try {
    const pos = await otherVoicePositives(voices, o.phrase, o.otherVoicePositives, o.seed + 6);
    for (const c of pos) await labelClip(pipeline, c, windows);
    const neg = await otherVoiceNegatives(voices, o.phrase, o.otherVoiceMinutes * 60, o.seed + 7);
    for (const c of neg) await labelClip(pipeline, c, windows);
    return { positiveClips: pos.length, negativeSamples: neg.reduce((n, c) => n + c.audio.length, 0) };
  } finally {
    voices.dispose();
  }
}
