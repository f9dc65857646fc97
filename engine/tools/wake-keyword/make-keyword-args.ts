// The command line of make-keyword.ts (its header lists the options): each option checked, a wrong one named in
// one line.
import { resolve } from 'node:path';
import { DEFAULT_MINING } from './hard-negatives.js';
import type { KeywordOptions } from './keyword-options.js';
import { parseRhvoiceShare } from './rhvoice-corpus.js';

export function parseKeywordArgs(argv: string[]): { out: string; options: Partial<KeywordOptions> } {
  const options: Partial<KeywordOptions> = {};
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const int = () => {
      const v = Number(value());
      if (!Number.isInteger(v) || v <= 0) throw new Error(`${a} needs a positive integer`);
      return v;
    };
    if (a === '--phrase') options.phrase = value();
    else if (a === '--seed') options.seed = int();
    else if (a === '--positives') options.positives = int();
    else if (a === '--negative-minutes') options.negativeMinutes = int();
    else if (a === '--real-minutes') options.realMinutes = int();
    else if (a === '--real-positives') options.realBackgroundPositives = int();
    else if (a === '--real-takes') options.realPositiveTakes = int();
    else if (a === '--dev') options.devSplit = true;
    else if (a === '--mine-with')
      options.mining = { ...DEFAULT_MINING, ...options.mining, fromDir: resolve(value()) };
    else if (a === '--real-speech-share' || a === '--real-phone-share') {
      const v = Number(value());
      if (!Number.isFinite(v) || v < 0 || v > 1) throw new Error(`${a} needs a share from 0 to 1`);
      const mix = options.realMix ?? { speechShare: 0.3, phoneShare: 0 };
      options.realMix = a === '--real-speech-share' ? { ...mix, speechShare: v } : { ...mix, phoneShare: v };
    } else if (a === '--other-voices') {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 0) throw new Error(`${a} needs a whole number (0: espeak-ng alone)`);
      options.otherVoicePositives = n;
      if (n === 0) options.otherVoiceMinutes = 0;
    } else if (a === '--rhvoice') Object.assign(options, parseRhvoiceShare(value()));
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else out = a;
  }
  if (!out)
    throw new Error(
      'usage: make-keyword.ts OUT_DIR [--phrase TEXT] [--seed N] [--positives N] [--negative-minutes M] [--other-voices N] [--rhvoice N] [--real-minutes M] [--real-positives N] [--real-takes N] [--real-speech-share F] [--real-phone-share F] [--dev] [--mine-with DIR]',
    );
  return { out: resolve(out), options };
}
