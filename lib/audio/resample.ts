// Sample-rate conversion, shared by the voice pipeline, the Wyoming server and the wake-keyword generator: pure
// arithmetic over float samples, no I/O and no errors of its own.

const HALF_TAPS = 16;

/**
 * Windowed-sinc resampling (Blackman window, cutoff at the lower Nyquist): linear interpolation would fold
 * 8–24 kHz energy of a 48 kHz microphone into the speech band the VAD listens to. Streaming: chunks may be any
 * length, and the output does not depend on where the input was cut.
 */
export class StreamingResampler {
  readonly #ratio: number;
  readonly #cutoff: number;
  readonly #halfWidth: number;
  #buffer = new Float32Array(0);
  /** Absolute input index of #buffer[0]. */
  #bufferStart = 0;
  #nextOut = 0;
  #inputLength = 0;

  constructor(fromRate: number, toRate: number) {
    this.#ratio = toRate / fromRate;
    this.#cutoff = Math.min(1, this.#ratio);
    this.#halfWidth = HALF_TAPS / this.#cutoff;
  }

  push(input: Float32Array): Float32Array {
    if (this.#ratio === 1) return input;
    const merged = new Float32Array(this.#buffer.length + input.length);
    merged.set(this.#buffer);
    merged.set(input, this.#buffer.length);
    this.#buffer = merged;
    this.#inputLength += input.length;
    return this.#produce(this.#inputLength - 1 - this.#halfWidth);
  }

  /** The outputs that needed input beyond the end; the stream is over after this. */
  flush(): Float32Array {
    if (this.#ratio === 1) return new Float32Array(0);
    return this.#produce(Number.POSITIVE_INFINITY);
  }

  #produce(maxCentre: number): Float32Array {
    const total = Math.floor(this.#inputLength * this.#ratio);
    const out: number[] = [];
    while (this.#nextOut < total && this.#nextOut / this.#ratio <= maxCentre) {
      out.push(this.#sample(this.#nextOut / this.#ratio));
      this.#nextOut++;
    }
    const keepFrom = Math.max(0, Math.floor(this.#nextOut / this.#ratio - this.#halfWidth) - 1);
    if (keepFrom > this.#bufferStart) {
      this.#buffer = this.#buffer.slice(keepFrom - this.#bufferStart);
      this.#bufferStart = keepFrom;
    }
    return Float32Array.from(out);
  }

  #sample(centre: number): number {
    const first = Math.max(this.#bufferStart, Math.ceil(centre - this.#halfWidth));
    const last = Math.min(this.#inputLength - 1, Math.floor(centre + this.#halfWidth));
    let acc = 0;
    let norm = 0;
    for (let j = first; j <= last; j++) {
      const x = (j - centre) * this.#cutoff;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w =
        0.42 + 0.5 * Math.cos((Math.PI * x) / HALF_TAPS) + 0.08 * Math.cos((2 * Math.PI * x) / HALF_TAPS);
      acc += this.#buffer[j - this.#bufferStart]! * sinc * w;
      norm += sinc * w;
    }
    return norm !== 0 ? acc / norm : 0;
  }
}

export function resample(input: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (fromRate === toRate) return input;
  const r = new StreamingResampler(fromRate, toRate);
  const head = r.push(input);
  const tail = r.flush();
  const out = new Float32Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}
