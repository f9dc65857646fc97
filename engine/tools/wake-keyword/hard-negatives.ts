// Hard-negative mining (recipe 8, issue 45): a trained head (recipe 7's) scores the real-audio negatives of the
// new corpus, and the windows it scores highest, the ones that nearly woke it, weigh more in the next head's loss
// (extra copies among the negatives). Recipe 7's last false wakes were foreign speech; most real windows are
// audio a head already ignores, and these few shape its edge. Recipe 8 holds the development sources out of the
// draw (dev-split.ts), so its real windows are mostly not the ones recipe 7 trained on: the old head meets them
// for the first time. Scoring reuses the corpus's embeddings: no audio is decoded again.
import { type WakeGraphRef, wakeHeadGraph } from '../../../models/wake-package.js';
import { WakePipeline } from '../../src/wake.js';
import type { LabelledWindows } from './features.js';

export interface MiningRecipe {
  /** A keyword package whose head (`<name>.mnn`) scores the windows. */
  fromDir: string;
  /** Windows scoring at least this are kept… */
  threshold: number;
  /** …the highest `cap` of them… */
  cap: number;
  /** …each this many more times among the negatives (a loss weight without a weighted loss). */
  copies: number;
}

/** Set before recipe 8 ran, not fitted to any figure: from a fifth of the way to a wake (recipe 7 wakes at 0.6
 *  over 3 frames) a window is a near miss; three more copies give it four times an ordinary window's weight. */
export const DEFAULT_MINING: Omit<MiningRecipe, 'fromDir'> = { threshold: 0.2, cap: 4000, copies: 3 };

export interface Mined {
  /** The extra copies to add to the negatives. */
  windows: Float32Array[];
  /** How many windows scored at least the threshold, before the cap. */
  found: number;
  /** Their scores, highest first (capped). */
  scores: number[];
}

/** Scores `candidates` (embedding windows) with `m.fromDir`'s head and returns copies of the highest. */
export async function mineHardNegatives(
  features: { melspectrogram: WakeGraphRef; embedding: WakeGraphRef },
  name: string,
  m: MiningRecipe,
  candidates: readonly Float32Array[],
): Promise<Mined> {
  const pipeline = await WakePipeline.load(
    { ...features, heads: [{ name, ...wakeHeadGraph(m.fromDir, `${name}.mnn`, name) }] },
    { threads: 1 },
  );
  const kept: Array<{ window: Float32Array; score: number }> = [];
  try {
    for (const window of candidates) {
      const score = (await pipeline.score(window))[0] ?? 0;
      if (score >= m.threshold) kept.push({ window, score });
    }
  } finally {
    await pipeline.dispose();
  }
  kept.sort((a, b) => b.score - a.score);
  const top = kept.slice(0, m.cap);
  return {
    windows: top.flatMap((k) => Array.from({ length: m.copies }, () => k.window)),
    found: kept.length,
    scores: top.map((k) => k.score),
  };
}

/** What a keyword's report records of its mining (make-keyword.ts KeywordReport). */
export interface MinedRecord {
  from: string;
  candidates: number;
  found: number;
  kept: number;
  copies: number;
  /** The ten highest scores the earlier head gave, for the log and the record. */
  topScores: number[];
}

/** Recipe 8's step between the corpus and training: mines `range` of `windows.negatives` (the real-audio ones,
 *  training-corpus.ts) and adds the copies to them. The synthetic near misses already weigh as they are. */
export async function addHardNegatives(
  features: { melspectrogram: WakeGraphRef; embedding: WakeGraphRef },
  name: string,
  m: MiningRecipe,
  windows: LabelledWindows,
  range: { start: number; end: number },
  log: (line: string) => void,
): Promise<MinedRecord> {
  const real = windows.negatives.slice(range.start, range.end);
  const mined = await mineHardNegatives(features, name, m, real);
  windows.negatives.push(...mined.windows);
  log(
    `  hard negatives: ${mined.scores.length} of ${real.length} real windows (${mined.found} at ${m.threshold} or more under ${m.fromDir}), ${m.copies} more copies each`,
  );
  return {
    from: m.fromDir,
    candidates: real.length,
    found: mined.found,
    kept: mined.scores.length,
    copies: m.copies,
    topScores: mined.scores.slice(0, 10).map((x) => Number(x.toFixed(3))),
  };
}
