import test from 'ava';
import { nearMiss, phraseVariant } from '../../engine/tools/wake-keyword/corpus.js';
import {
  MAX_FALSE_REJECT_RATE,
  rankRules,
  type ScoredValidation,
} from '../../engine/tools/wake-keyword/rule-choice.js';
import { rng } from '../../engine/tools/wake-keyword/speech.js';
import { timbreText } from '../../engine/tools/wake-keyword/timbres.js';

const frames = (xs: number[]) => xs.map((x) => Float32Array.of(x));
// 12 start-up frames are never scored (features.ts), then the clip's own frames.
const startUp = Array<number>(12).fill(0);

/** A positive clip whose keyword ends at frame 20 (sample 1280·21) with these scores from frame 12 on. */
function positive(scores: number[]): ScoredValidation['positives'][number] {
  return { scores: frames([...startUp, ...scores]), keywordEnd: 1280 * 21 };
}

test('rule choice: the fewest false wakes among rules that miss at most 8 % of wake words', (t) => {
  // 20 positives: 17 reach 0.96–0.98 for three frames around the keyword's end, 3 only 0.6.
  const strong = positive([0, 0, 0, 0, 0, 0, 0, 0.96, 0.97, 0.98, 0]);
  const weak = positive([0, 0, 0, 0, 0, 0, 0, 0.6, 0.6, 0.6, 0]);
  // One hour of negatives: one frame at 0.92, later three at 0.85, later three at 0.55.
  const calm = Array<number>(100).fill(0.1);
  const negatives = frames([...startUp, ...calm, 0.92, ...calm, 0.85, 0.85, 0.85, ...calm, 0.55, 0.55, 0.55]);
  const v: ScoredValidation = {
    positives: [...Array.from({ length: 17 }, () => strong), weak, weak, weak],
    negatives: [negatives],
    negativeHours: 1,
  };
  const ranked = rankRules(v, 2000);
  const at = (threshold: number, triggerFrames: number) =>
    ranked.find((o) => o.rule.threshold === threshold && o.rule.triggerFrames === triggerFrames)!;
  // 0.5 catches every wake word but wakes three (1 frame) or two (2-3 frames) times an hour.
  t.is(at(0.5, 1).falseRejects, 0);
  t.is(at(0.5, 1).falseAccepts, 3);
  t.is(at(0.5, 3).falseAccepts, 2);
  // 0.95 and up: no false wake, but 3 of 20 missed (15 %): over the cap.
  t.is(at(0.95, 1).falseAccepts, 0);
  t.is(at(0.95, 1).falseRejectRate, 0.15);
  t.true(at(0.95, 1).falseRejectRate > MAX_FALSE_REJECT_RATE);
  // Within the cap (0 misses) the fewest false wakes: 0.6 over 2 frames sees only the 0.85 run (1 an hour).
  const [best] = ranked;
  t.deepEqual(best!.rule, { threshold: 0.6, triggerFrames: 2, refractoryMs: 2000 });
  t.is(best!.falseRejects, 0);
  t.is(best!.falseAccepts, 1);
  // Rules over the cap come after every rule within it.
  const firstOver = ranked.findIndex((o) => o.falseRejectRate > MAX_FALSE_REJECT_RATE);
  t.true(ranked.slice(firstOver).every((o) => o.falseRejectRate > MAX_FALSE_REJECT_RATE));
});

test('near misses come from the phrase: one word swapped, or one of its words inside another sentence', (t) => {
  const r = rng(5);
  const made = Array.from({ length: 200 }, () => nearMiss(r, 'hey computer'));
  t.false(made.includes('hey computer'), 'never the phrase itself');
  t.true(
    made.some((m) => /^hey \S+$/.test(m) && m !== 'hey computer'),
    'hey + another word',
  );
  t.true(
    made.some((m) => /^\S+ computer$/.test(m)),
    'another word + computer',
  );
  t.true(
    made.some((m) => m.split(' ').length > 2 && m.includes('computer')),
    'computer inside a sentence',
  );
  t.true(made.every((m) => m.includes('hey') || m.includes('computer')));
});

test('made-up timbres are espeak-ng variant files with every formant and the voice quality set', (t) => {
  const text = timbreText('mnnedge3', rng(9));
  const lines = text.trim().split('\n');
  t.is(lines[0], 'language variant');
  t.is(lines[1], 'name mnnedge3');
  const formants = lines.filter((l) => l.startsWith('formant '));
  t.is(formants.length, 6);
  for (const f of formants) {
    const [, n, freq, height, width] = f.split(' ').map(Number);
    t.true(n! >= 0 && n! <= 5);
    t.true(freq! >= 40 && freq! <= 160, f);
    t.true(height! >= 60 && height! <= 130, f);
    t.true(width! >= 70 && width! <= 130, f);
  }
  t.regex(text, /^pitch \d+ \d+$/m);
  t.regex(text, /^roughness [0-4]$/m);
  t.not(timbreText('mnnedge3', rng(10)), text, 'another seed, another timbre');
});

test('made-up timbres (recipe 4) also shape the spectrum, consonants, echo, voicing and flutter', (t) => {
  const r = rng(4);
  const texts = Array.from({ length: 40 }, (_, i) => timbreText(`mnnedge${i}`, r));
  for (const key of ['tone', 'consonants', 'echo', 'voicing', 'flutter'])
    t.true(
      texts.some((x) => new RegExp(`^${key} `, 'm').test(x)),
      `some timbre sets ${key}`,
    );
  for (const x of texts) {
    const tone = /^tone (.*)$/m.exec(x)?.[1];
    if (tone === undefined) continue;
    const v = tone.split(' ').map(Number);
    t.is(v.length, 8, tone);
    // Four (frequency, gain) points in rising frequency.
    t.true(v[0]! < v[2]! && v[2]! < v[4]! && v[4]! < v[6]!, tone);
  }
});

test('rule choice: a rule that waits past the latency target is not shipped, however few false wakes it has', (t) => {
  // The keyword's scores rise only after its end (frames 21–26): 1 frame detects 80 ms late, 3 frames 240 ms.
  const late = positive([0, 0, 0, 0, 0, 0, 0, 0, 0, 0.97, 0.97, 0.97, 0.97, 0.97, 0.97]);
  const calm = Array<number>(100).fill(0.1);
  // Two frames at 0.97 in the negatives: 1 or 2 frames wake once; 3 never do.
  const v: ScoredValidation = {
    positives: Array.from({ length: 10 }, () => late),
    negatives: [frames([...startUp, ...calm, 0.97, 0.97, ...calm])],
    negativeHours: 1,
  };
  const ranked = rankRules(v, 2000);
  const three = ranked.find((o) => o.rule.threshold === 0.5 && o.rule.triggerFrames === 3)!;
  t.is(three.falseAccepts, 0);
  t.is(three.medianLatencyMs, 240);
  const [best] = ranked;
  t.true(
    best!.medianLatencyMs! <= 200,
    `chosen: ${JSON.stringify(best!.rule)} at ${best!.medianLatencyMs} ms`,
  );
  t.is(best!.falseAccepts, 1);
  t.is(best!.falseRejects, 0);
});

test('positives say the phrase plainly three times in five, once as a question, once with a comma', (t) => {
  const said = Array.from({ length: 10 }, (_, i) => phraseVariant('hey computer', i));
  t.deepEqual(said.slice(0, 5), [
    'hey computer',
    'hey computer',
    'hey computer',
    'hey computer?',
    'hey, computer',
  ]);
  t.deepEqual(said.slice(5), said.slice(0, 5));
  t.is(phraseVariant('computer', 4), 'computer', 'a one-word phrase has no comma to add');
});
