// Wyoming audio is integer PCM described by `rate`, `width` (bytes per sample) and `channels` on audio-start and
// every audio-chunk. In: any of those → the 16 kHz mono float the ASR stage takes, converted chunk by chunk as
// it arrives, into a buffer bounded by a length in seconds. Out: the TTS stage's float chunks → mono s16le at
// one rate per stream (a chunk at another rate is resampled to the announced one).
import { downmix, floatToS16le, PIPELINE_RATE, StreamingResampler } from '../audio/pcm.js';
import { WorkloadError } from '../shared/errors.js';

export interface WyomingAudioFormat {
  rate: number;
  width: number;
  channels: number;
}

const MIN_RATE = 8000;
const MAX_RATE = 192000;
const MAX_CHANNELS = 8;

/** The format fields of an audio-start or audio-chunk, checked; the messages name the field. */
export function wyomingAudioFormat(data: Record<string, unknown>): WyomingAudioFormat {
  const { rate, width, channels } = data;
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate < MIN_RATE || rate > MAX_RATE) {
    throw new WorkloadError(
      'EAUDIO',
      `Unsupported audio rate ${JSON.stringify(rate) ?? 'missing'}: expected an integer from ${MIN_RATE} to ${MAX_RATE} Hz`,
    );
  }
  if (width !== 1 && width !== 2 && width !== 3 && width !== 4) {
    throw new WorkloadError(
      'EAUDIO',
      `Unsupported audio width ${JSON.stringify(width) ?? 'missing'}: expected 1, 2, 3 or 4 bytes per sample`,
    );
  }
  if (
    typeof channels !== 'number' ||
    !Number.isInteger(channels) ||
    channels < 1 ||
    channels > MAX_CHANNELS
  ) {
    throw new WorkloadError(
      'EAUDIO',
      `Unsupported audio channels ${JSON.stringify(channels) ?? 'missing'}: expected 1 to ${MAX_CHANNELS}`,
    );
  }
  return { rate, width, channels };
}

export function sameFormat(a: WyomingAudioFormat, b: WyomingAudioFormat): boolean {
  return a.rate === b.rate && a.width === b.width && a.channels === b.channels;
}

/** Signed little-endian integer PCM (the protocol's audio, as Python's audioop reads it) → one array per channel. */
export function decodeIntPcm(bytes: Uint8Array, f: WyomingAudioFormat): Float32Array[] {
  const frameBytes = f.width * f.channels;
  if (bytes.length % frameBytes !== 0) {
    throw new WorkloadError(
      'EAUDIO',
      `Audio chunk of ${bytes.length} bytes is not a whole number of frames (${f.channels} channel(s) × ${f.width} byte(s))`,
    );
  }
  const frames = bytes.length / frameBytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = Array.from({ length: f.channels }, () => new Float32Array(frames));
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < f.channels; c++) {
      const at = i * frameBytes + c * f.width;
      let v: number;
      switch (f.width) {
        case 1:
          v = view.getInt8(at) / 128;
          break;
        case 2:
          v = view.getInt16(at, true) / 32768;
          break;
        case 3:
          v = (view.getUint8(at) | (view.getUint8(at + 1) << 8) | (view.getInt8(at + 2) << 16)) / 8388608;
          break;
        default:
          v = view.getInt32(at, true) / 2147483648;
      }
      out[c]![i] = v;
    }
  }
  return out;
}

/** One transcribe's audio: chunks of any declared format in, 16 kHz mono float kept up to `maxSeconds`. */
export class WyomingAudioIn {
  readonly #maxSamples: number;
  readonly #maxSeconds: number;
  #format: WyomingAudioFormat;
  #resampler: StreamingResampler;
  #parts: Float32Array[] = [];
  #length = 0;

  constructor(format: WyomingAudioFormat, maxSeconds: number) {
    this.#format = format;
    this.#resampler = new StreamingResampler(format.rate, PIPELINE_RATE);
    this.#maxSeconds = maxSeconds;
    this.#maxSamples = maxSeconds * PIPELINE_RATE;
  }

  /** Samples at 16 kHz so far. */
  get samples(): number {
    return this.#length;
  }

  /** One chunk in its own declared format (a client may change format between chunks). */
  push(payload: Uint8Array, format: WyomingAudioFormat = this.#format): void {
    if (!sameFormat(format, this.#format)) {
      if (format.rate !== this.#format.rate) {
        this.#append(this.#resampler.flush());
        this.#resampler = new StreamingResampler(format.rate, PIPELINE_RATE);
      }
      this.#format = format;
    }
    this.#append(this.#resampler.push(downmix(decodeIntPcm(payload, format))));
  }

  /** The whole utterance at 16 kHz mono. */
  finish(): Float32Array {
    this.#append(this.#resampler.flush());
    const out = new Float32Array(this.#length);
    let at = 0;
    for (const p of this.#parts) {
      out.set(p, at);
      at += p.length;
    }
    this.#parts = [];
    return out;
  }

  #append(samples: Float32Array): void {
    if (samples.length === 0) return;
    if (this.#length + samples.length > this.#maxSamples) {
      throw new WorkloadError(
        'ETOOLARGE',
        `Audio is longer than ${this.#maxSeconds} s (wyoming.maxAudioSeconds): send shorter requests`,
      );
    }
    // The resampler returns the caller's array when no resampling is needed: keep a copy of it.
    this.#parts.push(samples.slice());
    this.#length += samples.length;
  }
}

/** TTS chunks → mono s16le at the first chunk's rate. */
export class WyomingAudioOut {
  rate: number | undefined;
  #resampler: StreamingResampler | undefined;
  #resamplerFrom = 0;

  /** PCM bytes for this chunk (at `rate`, fixed by the first chunk). */
  push(samples: Float32Array, sampleRate: number): Buffer {
    this.rate ??= sampleRate;
    if (sampleRate === this.rate) return floatToS16le(samples);
    if (!this.#resampler || this.#resamplerFrom !== sampleRate) {
      this.#resampler = new StreamingResampler(sampleRate, this.rate);
      this.#resamplerFrom = sampleRate;
    }
    return floatToS16le(this.#resampler.push(samples));
  }

  /** What a resampler still holds at the end of the stream. */
  flush(): Buffer {
    const tail = this.#resampler?.flush();
    this.#resampler = undefined;
    return tail && tail.length > 0 ? floatToS16le(tail) : Buffer.alloc(0);
  }
}
