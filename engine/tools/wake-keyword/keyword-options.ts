// What a keyword recipe is made of (make-keyword.ts): its options and the defaults (recipe 5's sizes), apart
// from the generator so its command line (make-keyword-args.ts) can build them without importing the generator.
import { defaultTriggerRule, type TriggerRule } from '../../src/wake-trigger.js';
import type { MiningRecipe } from './hard-negatives.js';
import type { RealMix } from './real-negatives.js';

export interface KeywordOptions {
  phrase: string;
  seed: number;
  positives: number;
  negativeMinutes: number;
  heldOutPositives: number;
  heldOutNegativeMinutes: number;
  /** Made-up espeak-ng timbres added to the training voices (timbres.ts); 0 for the stock ones only. */
  timbres: number;
  /** Positives in flite's and festival's speakers (other-voices.ts), training only; 0 for espeak-ng alone. */
  otherVoicePositives: number;
  /** Minutes of negatives in those speakers. */
  otherVoiceMinutes: number;
  /** Positives in RHVoice's training voices (rhvoice.ts; --rhvoice N), off without the engine; 0: none. */
  rhvoicePositives: number;
  /** Minutes of negatives in those voices. */
  rhvoiceMinutes: number;
  /** The rule the package ships with: `rule` as given, or (true) the candidate nearest both targets on the
   *  validation set, with `rule`'s refractory period. */
  /** Minutes of negatives over real recordings of the training split (real-negatives.ts; 0: none). */
  realMinutes: number;
  /** Synthetic positives over real background (and the training split's real speakers of the phrase). */
  realBackgroundPositives: number;
  /** Augmented takes of each real speaker's clip of the phrase (recipe 6; real-negatives.ts augmentedTake). */
  realPositiveTakes: number;
  /** Recipe 7: the share of real windows drawn from speech, and of those in a telephone band (RealMix);
   *  undefined: recipe 6's draw (by hours, each file looped). */
  realMix?: RealMix;
  /** Recipe 8: the development sources (dev-split.ts) out of training, their false accepts in the rule choice. */
  devSplit: boolean;
  /** Recipe 8: hard negatives mined with another package's head (hard-negatives.ts); undefined: none. */
  mining?: MiningRecipe;
  chooseRule: boolean;
  rule: TriggerRule;
  log: (line: string) => void;
}

export const defaultKeywordOptions: KeywordOptions = {
  phrase: 'hey computer',
  seed: 2028,
  // Recipe 4: twice recipe 3's positives and half again its negatives. On the development set the new timbres
  // with 1,500 phrases and 35 min gave 7–9 false accepts an hour at 10 % false rejects; with 3,000 and 65 min, 4.
  positives: 3000,
  negativeMinutes: 60,
  heldOutPositives: 160,
  heldOutNegativeMinutes: 20,
  timbres: 150,
  // Recipe 5: speakers made from recordings of real people. On the development set (held-out espeak-ng voices,
  // 60 min), adding 1,200 of their phrases and 20 min of their speech took false accepts at 8 % false rejects from
  // 9 an hour to 5 (two seeds each); as much more espeak-ng speech instead gave 7 (docs/WAKE.md).
  otherVoicePositives: 1200,
  otherVoiceMinutes: 20,
  // Off until their share is chosen on the development set (docs/WAKE.md, "RHVoice voices").
  rhvoicePositives: 0,
  rhvoiceMinutes: 0,
  // Off until a training run with them is measured against recipe 5 on the real evaluation split (issue 45).
  realMinutes: 0,
  realBackgroundPositives: 0,
  realPositiveTakes: 0,
  devSplit: false,
  chooseRule: true,
  rule: { ...defaultTriggerRule },
  log: (line) => console.log(line),
};
