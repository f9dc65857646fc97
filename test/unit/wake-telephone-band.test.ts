// The telephone band recipe 7 puts some real speech through (engine/tools/wake-keyword/telephone-band.ts).
import test from 'ava';
import { RATE, rmsOf } from '../../engine/tools/wake-keyword/speech.js';
import { telephoneBand } from '../../engine/tools/wake-keyword/telephone-band.js';

const tone = (hz: number) =>
  Float32Array.from({ length: RATE }, (_, i) => 0.5 * Math.sin((2 * Math.PI * hz * i) / RATE));
/** Gain in dB over the second half (the filters settled). */
const gainDb = (hz: number) => {
  const x = tone(hz);
  const y = telephoneBand(x);
  return 20 * Math.log10(rmsOf(y.subarray(RATE / 2)) / rmsOf(x.subarray(RATE / 2)));
};

test('telephone band: speech frequencies pass, what a phone line cuts is cut', (t) => {
  t.true(gainDb(1000) > -1, `1 kHz ${gainDb(1000).toFixed(1)} dB`);
  t.true(gainDb(6000) < -20, `6 kHz ${gainDb(6000).toFixed(1)} dB`);
  t.true(gainDb(100) < -15, `100 Hz ${gainDb(100).toFixed(1)} dB`);
  t.is(telephoneBand(tone(1000)).length, RATE);
});
