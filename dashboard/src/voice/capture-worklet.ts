// Runs on the audio rendering thread: turns the microphone's float frames at the context's rate into 16 kHz
// mono signed 16-bit PCM, posted to the page in 20 ms chunks with their level. Built as its own bundle
// (assets/capture-worklet.js) because audioWorklet.addModule loads a separate script.

declare const sampleRate: number;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, ctor: new () => AudioWorkletProcessor): void;

const TARGET_RATE = 16000;
const CHUNK = 320; // 20 ms at 16 kHz

class PcmCaptureProcessor extends AudioWorkletProcessor {
  readonly #step = sampleRate / TARGET_RATE;
  /** Position of the next output sample, in input samples relative to the current block. */
  #pos = 0;
  #prev = 0;
  #out = new Int16Array(CHUNK);
  #fill = 0;
  #sumSquares = 0;
  // A first-order low-pass ahead of decimation keeps energy above 8 kHz from folding into speech.
  #lp = 0;
  readonly #alpha =
    this.#step > 1
      ? Math.min(1, (2 * Math.PI * 7000) / sampleRate / (1 + (2 * Math.PI * 7000) / sampleRate))
      : 1;

  process(inputs: Float32Array[][]): boolean {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const n = channels[0]!.length;
    const mono = new Float32Array(n);
    for (const ch of channels) for (let i = 0; i < n; i++) mono[i]! += ch[i]! / channels.length;
    for (let i = 0; i < n; i++) {
      this.#lp += this.#alpha * (mono[i]! - this.#lp);
      mono[i] = this.#lp;
    }
    // Linear interpolation at time pos - 1, so x[-1] is the previous block's last sample (a one-sample delay).
    while (this.#pos < n) {
      const i = Math.floor(this.#pos);
      const a = i === 0 ? this.#prev : mono[i - 1]!;
      const b = mono[i]!;
      this.#emit(Math.max(-1, Math.min(1, a + (b - a) * (this.#pos - i))));
      this.#pos += this.#step;
    }
    this.#pos -= n;
    this.#prev = mono[n - 1]!;
    return true;
  }

  #emit(v: number): void {
    this.#out[this.#fill++] = v < 0 ? v * 0x8000 : v * 0x7fff;
    this.#sumSquares += v * v;
    if (this.#fill < CHUNK) return;
    const level = Math.sqrt(this.#sumSquares / CHUNK);
    this.port.postMessage({ pcm: this.#out.buffer, level }, [this.#out.buffer]);
    this.#out = new Int16Array(CHUNK);
    this.#fill = 0;
    this.#sumSquares = 0;
  }
}

registerProcessor('pcm-capture', PcmCaptureProcessor);
