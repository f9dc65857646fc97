// bench/wake on RHVoice's held-out voices (engine/tools/wake-keyword/rhvoice.ts): false rejects of a keyword said
// by speakers no training source has (bdl, clb, ksp), apart from the espeak-ng and the real speakers' figures.
// Each voice says the phrase at its own rates and pitches; per voice, then in all.
import type { WakePipeline } from '../../engine/index.js';
import type { TriggerRule } from '../../engine/src/wake-trigger.js';
import { detectStream, positiveOutcome } from '../../engine/tools/wake-keyword/features.js';
import { Rhvoice, rhvoiceMissing, rhvoiceVoices } from '../../engine/tools/wake-keyword/rhvoice.js';
import { rhvoicePositives } from '../../engine/tools/wake-keyword/rhvoice-corpus.js';
import { bar, check, fmt } from './stats.js';

export interface RhvoiceKeyword {
  name: string;
  index: number;
  phrase: string;
  rule: TriggerRule;
}

/** False-reject rate on `perVoice` clips of each held-out RHVoice voice, or undefined (and one line) without it. */
export async function rhvoiceFalseRejects(
  pipeline: WakePipeline,
  k: RhvoiceKeyword,
  perVoice: number,
  seed: number,
  log: (line: string) => void,
): Promise<number | undefined> {
  const voices = rhvoiceVoices('eval');
  const missing = rhvoiceMissing(voices);
  if (missing) {
    log(`SKIP false rejects on held-out RHVoice voices: ${missing}`);
    return undefined;
  }
  const engine = new Rhvoice();
  let missed = 0;
  let total = 0;
  try {
    for (const [i, voice] of voices.entries()) {
      const clips = await rhvoicePositives(engine, [voice], k.phrase, perVoice, seed + i);
      let voiceMissed = 0;
      for (const c of clips) {
        const { detections } = await detectStream(pipeline, c.audio, k.rule, k.index);
        if (!positiveOutcome(detections, c.keywordEnd ?? 0).detected) voiceMissed++;
      }
      log(`  ${k.name}, RHVoice ${voice}: ${voiceMissed}/${clips.length} missed`);
      missed += voiceMissed;
      total += clips.length;
    }
  } finally {
    engine.dispose();
  }
  const frr = (missed / total) * 100;
  log(bar(`false rejects (RHVoice), ${k.name}`, frr, 20, `${fmt(frr, 1)} % (${missed}/${total})`));
  log(
    check(
      `false rejects (synthetic, held-out RHVoice voices ${voices.join(', ')}), ${k.name}`,
      frr,
      '%',
      '<= 5',
      frr <= 5,
    ),
  );
  return frr;
}
