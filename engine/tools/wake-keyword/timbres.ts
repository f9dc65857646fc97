// Made-up espeak-ng timbres for training: espeak-ng ships about 75 voice variants, and a head trained on 3/4 of
// them missed every phrase of a held-out variant whose formants sit far from the rest (kaukovalta: F1 at 40 %,
// rough). Variant files are plain text (formant frequency/height/width as percentages, pitch, roughness), so
// the generator writes its own, seeded, into a private copy of espeak-ng's data directory and passes it with
// `--path`: the training voices then cover far more vocal tracts than the stock set. Held-out voices stay stock.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variantDir } from './speech.js';

export interface Timbres {
  /** The directory to pass as espeak-ng's `--path` (it holds `espeak-ng-data`). */
  path: string;
  /** The made-up variants' names, for `accent+name`. */
  names: string[];
  dispose(): void;
}

/** espeak-ng's `tone`: four (frequency Hz, gain %) points of an equaliser over the voice. */
function toneBands(between: (lo: number, hi: number) => number): number[] {
  // [frequency range, gain range]: the higher bands are cut or boosted less.
  return [
    [80, 120, 30, 255],
    [500, 900, 30, 255],
    [1200, 2200, 20, 200],
    [2500, 3500, 10, 150],
  ].flatMap(([f0, f1, g0, g1]) => [between(f0!, f1!), between(g0!, g1!)]);
}

/** One variant file: every formant moved and reshaped at random, within what still sounds like speech. */
export function timbreText(name: string, r: () => number): string {
  const between = (lo: number, hi: number) => Math.round(lo + (hi - lo) * r());
  const lines = ['language variant', `name ${name}`];
  // A third of the timbres are extreme (formants down to 40 % or up to 160 %), like espeak-ng's oddest variants.
  const wide = r() < 1 / 3;
  for (let f = 0; f <= 5; f++) {
    const freq = wide ? between(40, 160) : between(70, 135);
    lines.push(`formant ${f} ${freq} ${between(60, 130)} ${between(70, 130)}`);
  }
  const base = between(60, 200);
  lines.push(`pitch ${base} ${base + between(20, 120)}`);
  lines.push(`roughness ${Math.min(4, Math.floor(r() * 6))}`);
  if (r() < 0.3) lines.push(`breath ${Array.from({ length: 8 }, () => between(0, 40)).join(' ')}`);
  // Recipe 4: the voice qualities the formants do not reach. The held-out timbres missed most often shape the
  // spectrum with `tone` and soften consonants (kaukovalta) or add echo and change voicing (RicishayMax2); with
  // these, the development set's misses of kaukovalta's phrases fell from 10 to 5 of 15.
  if (r() < 0.5) lines.push(`tone ${toneBands(between).join(' ')}`);
  if (r() < 0.5) lines.push(`consonants ${between(50, 130)} ${between(50, 130)}`);
  if (r() < 0.25) lines.push(`echo ${between(50, 200)} ${between(10, 50)}`);
  if (r() < 0.3) lines.push(`voicing ${between(30, 160)}`);
  if (r() < 0.3) lines.push(`flutter ${between(0, 30)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A private espeak-ng data directory with `count` (at most 200) made-up variants (`mnnedge0`…) beside the stock
 * ones: the system's files linked, `voices/!v` and `lang` rebuilt. Throws when espeak-ng's data is not found.
 */
export function makeTimbres(count: number, r: () => number): Timbres {
  if (count > 200) throw new Error(`at most 200 made-up timbres fit espeak-ng's voice list, not ${count}`);
  const stockVariants = variantDir();
  if (!stockVariants) throw new Error("espeak-ng's voice variants were not found (apt install espeak-ng)");
  const system = join(stockVariants, '..', '..');
  const path = mkdtempSync(join(tmpdir(), 'mnn-edge-espeak-'));
  const data = join(path, 'espeak-ng-data');
  mkdirSync(join(data, 'voices', '!v'), { recursive: true });
  // espeak-ng lists at most 349 voices (languages and variants together): only the English languages (lang/gmw)
  // are linked, so the made-up variants fit; mbrola voices (voices/mb) are left out.
  for (const entry of readdirSync(system))
    if (entry !== 'voices' && entry !== 'lang') symlinkSync(join(system, entry), join(data, entry));
  mkdirSync(join(data, 'lang'));
  symlinkSync(join(system, 'lang', 'gmw'), join(data, 'lang', 'gmw'));
  for (const entry of readdirSync(stockVariants))
    symlinkSync(join(stockVariants, entry), join(data, 'voices', '!v', entry));
  const names = Array.from({ length: count }, (_, i) => `mnnedge${i}`);
  for (const name of names) writeFileSync(join(data, 'voices', '!v', name), timbreText(name, r));
  return { path, names, dispose: () => rmSync(path, { recursive: true, force: true }) };
}
