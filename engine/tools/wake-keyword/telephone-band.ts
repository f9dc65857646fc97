// A telephone's band for the keyword generator's real speech (recipe 7, real-negatives.ts): the held-out split's
// false accepts came in part from phone prompts (8 kHz), and the training split has no telephone recordings.
import { RATE } from './speech.js';

/** Speech as a telephone carries it: 300–3400 Hz (two Butterworth sections each side), as the held-out split's
 *  phone prompts sound; the training split has no telephone recordings of its own. */
export function telephoneBand(audio: Float32Array): Float32Array {
  let out = audio;
  for (let k = 0; k < 2; k++) out = biquad(biquad(out, 3400, 'low'), 300, 'high');
  return out;
}

/** One second-order Butterworth section (RBJ's cookbook), low- or high-pass at `hz`. */
function biquad(x: Float32Array, hz: number, kind: 'low' | 'high'): Float32Array {
  const w = (2 * Math.PI * hz) / RATE;
  const alpha = Math.sin(w) / Math.SQRT2;
  const cos = Math.cos(w);
  const a0 = 1 + alpha;
  const b1 = (kind === 'low' ? 1 - cos : -(1 + cos)) / a0;
  const b0 = b1 / (kind === 'low' ? 2 : -2);
  const a1 = (-2 * cos) / a0;
  const a2 = (1 - alpha) / a0;
  const y = new Float32Array(x.length);
  let x1 = 0;
  let x2 = 0;
  let y1 = 0;
  let y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const v = b0 * x[i]! + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2;
    x2 = x1;
    x1 = x[i]!;
    y2 = y1;
    y1 = v;
    y[i] = v;
  }
  return y;
}
