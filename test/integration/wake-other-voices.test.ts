// The wake-word generator's other speakers (engine/tools/wake-keyword/other-voices.ts): Debian's flite and
// festival, run for real. Skipped with one line where they are not installed.
import test from 'ava';
import {
  type OtherVoice,
  OtherVoices,
  otherVoiceNegatives,
  otherVoicePositives,
  otherVoicesMissing,
  randomOtherVoice,
} from '../../engine/tools/wake-keyword/other-voices.js';
import { RATE, rmsOf, rng } from '../../engine/tools/wake-keyword/speech.js';
import { skipWithLine } from '../helpers/skip.js';

const missing = await otherVoicesMissing();
if (missing) {
  skipWithLine(`SKIP wake-word other voices: ${missing}`);
} else {
  const voices = new OtherVoices();
  test.after.always(() => voices.dispose());
  const seconds = (x: Float32Array) => x.length / RATE;
  const flite = (voice: string, speed = 1): OtherVoice => ({
    engine: 'flite',
    voice,
    stretch: 1,
    f0: 110,
    speed,
  });
  const festival = (voice: string): OtherVoice => ({
    engine: 'festival',
    voice,
    stretch: 1,
    f0: 0,
    speed: 1,
  });

  test('every voice says the phrase: about a second of audible speech at 16 kHz', async (t) => {
    const all = [
      ...['kal', 'kal16', 'awb', 'rms', 'slt'].map((v) => flite(v)),
      ...['kal_diphone', 'ked_diphone', 'cmu_us_slt_arctic_hts'].map(festival),
    ];
    for (const v of all) {
      const audio = await voices.say('hey computer', v);
      t.true(seconds(audio) > 0.5 && seconds(audio) < 2.5, `${v.voice}: ${seconds(audio)} s`);
      t.true(rmsOf(audio) > 0.01, `${v.voice}: rms ${rmsOf(audio)}`);
    }
  });

  test('speed perturbation: played 1.15 times as fast, the same utterance is 1.15 times shorter', async (t) => {
    const slow = await voices.say('hey computer', flite('rms', 0.85));
    const fast = await voices.say('hey computer', flite('rms', 1.15));
    const ratio = slow.length / fast.length;
    // trimSilence works in 10 ms blocks, so the ratio is 1.15 / 0.85 within a few blocks.
    t.true(Math.abs(ratio - 1.15 / 0.85) < 0.05, `ratio ${ratio}`);
  });

  test('festival reads text with quotes and backslashes as words, never as Scheme', async (t) => {
    const audio = await voices.say('say "hey\\" computer") (quit', festival('kal_diphone'));
    t.true(seconds(audio) > 1, `${seconds(audio)} s`);
  });

  test('positives and negatives: seeded, labelled, keyword end inside the clip', async (t) => {
    const a = await otherVoicePositives(voices, 'hey computer', 4, 11);
    const b = await otherVoicePositives(voices, 'hey computer', 4, 11);
    t.deepEqual(
      a.map((c) => c.label),
      b.map((c) => c.label),
    );
    for (const c of a) {
      t.regex(c.label, /^positive (flite|festival) \S+ x\d\.\d\d @\d\.\d\d$/);
      t.true(c.keywordEnd! > RATE && c.keywordEnd! < c.audio.length, c.label);
    }
    const neg = await otherVoiceNegatives(voices, 'hey computer', 20, 12);
    const total = neg.reduce((n, c) => n + c.audio.length, 0);
    t.true(total >= 20 * RATE, `${total / RATE} s`);
    t.true(neg.every((c) => c.keywordEnd === undefined));
  });

  test('the voice draw covers both synthesisers, every speed within 0.85–1.15', (t) => {
    const r = rng(3);
    const drawn = Array.from({ length: 300 }, () => randomOtherVoice(r));
    t.true(drawn.some((v) => v.engine === 'festival') && drawn.some((v) => v.engine === 'flite'));
    t.true(drawn.every((v) => v.speed >= 0.85 && v.speed <= 1.15 && v.stretch >= 0.75 && v.stretch <= 1.35));
    t.is(new Set(drawn.map((v) => v.voice)).size, 8);
  });
}
