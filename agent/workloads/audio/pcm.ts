// PCM arithmetic for the voice pipeline: decoding raw frames, downmixing, resampling to the 16 kHz mono the
// VAD and ASR stages take, and level measurement for half-duplex and barge-in decisions.
import { resample, StreamingResampler } from '../../../lib/audio/resample.js';
import { WorkloadError } from '../shared/errors.js';

export { resample, StreamingResampler };

/** The pipeline's internal rate: Silero VAD and whisper-style audio encoders both take 16 kHz. */
export const PIPELINE_RATE = 16000;

export type SampleFormat = 's16le' | 'f32le';

export interface PcmFormat {
  sampleRate: number;
  channels: number;
  format: SampleFormat;
}

export const PIPELINE_FORMAT: PcmFormat = { sampleRate: PIPELINE_RATE, channels: 1, format: 's16le' };

const MIN_RATE = 8000;
const MAX_RATE = 192000;

/** Checks a declared stream format; the messages name the field and say what is accepted. */
export function checkPcmFormat(value: unknown): PcmFormat {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new WorkloadError('EAUDIO', 'Audio format must be an object {sampleRate, channels, format}');
  }
  const { sampleRate, channels, format } = value as Record<string, unknown>;
  if (
    typeof sampleRate !== 'number' ||
    !Number.isInteger(sampleRate) ||
    sampleRate < MIN_RATE ||
    sampleRate > MAX_RATE
  ) {
    throw new WorkloadError(
      'EAUDIO',
      `Unsupported sample rate ${String(sampleRate)}: expected an integer from ${MIN_RATE} to ${MAX_RATE} Hz`,
    );
  }
  if (channels !== 1 && channels !== 2) {
    throw new WorkloadError('EAUDIO', `Unsupported channel count ${String(channels)}: expected 1 or 2`);
  }
  if (format !== 's16le' && format !== 'f32le') {
    throw new WorkloadError(
      'EAUDIO',
      `Unsupported sample format ${JSON.stringify(format)}: expected "s16le" or "f32le"`,
    );
  }
  return { sampleRate, channels, format };
}

export function bytesPerFrame(f: PcmFormat): number {
  return (f.format === 's16le' ? 2 : 4) * f.channels;
}

/** Raw interleaved bytes → one Float32Array per channel, in [-1, 1]. */
export function decodePcm(bytes: Uint8Array, f: PcmFormat): Float32Array[] {
  const frameBytes = bytesPerFrame(f);
  if (bytes.length % frameBytes !== 0) {
    throw new WorkloadError(
      'EAUDIO',
      `PCM chunk of ${bytes.length} bytes is not a whole number of ${f.format} ${f.channels}-channel frames (${frameBytes} bytes each)`,
    );
  }
  const frames = bytes.length / frameBytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = Array.from({ length: f.channels }, () => new Float32Array(frames));
  const width = f.format === 's16le' ? 2 : 4;
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < f.channels; c++) {
      const at = i * frameBytes + c * width;
      out[c]![i] = f.format === 's16le' ? view.getInt16(at, true) / 32768 : view.getFloat32(at, true);
    }
  }
  return out;
}

/** Averages the channels; stereo microphones on boards are usually two copies of one capsule. */
export function downmix(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 0) return new Float32Array(0);
  if (channels.length === 1) return channels[0]!;
  const n = channels[0]!.length;
  const out = new Float32Array(n);
  for (const ch of channels) for (let i = 0; i < n; i++) out[i]! += ch[i]! / channels.length;
  return out;
}

/** Raw PCM chunks of a declared format → 16 kHz mono float, keeping resampler state across chunks. */
export class PcmToPipeline {
  readonly format: PcmFormat;
  readonly #resampler: StreamingResampler;

  constructor(format: PcmFormat) {
    this.format = checkPcmFormat(format);
    this.#resampler = new StreamingResampler(format.sampleRate, PIPELINE_RATE);
  }

  push(bytes: Uint8Array): Float32Array {
    return this.#resampler.push(downmix(decodePcm(bytes, this.format)));
  }

  flush(): Float32Array {
    return this.#resampler.flush();
  }
}

/** Any supported input → 16 kHz mono float, the pipeline's internal form. */
export function toPipelineAudio(channels: readonly Float32Array[], sampleRate: number): Float32Array {
  return resample(downmix(channels), sampleRate, PIPELINE_RATE);
}

export function floatToS16le(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    out.writeInt16LE(Math.round(s < 0 ? s * 32768 : s * 32767), i * 2);
  }
  return out;
}

export function rms(samples: Float32Array, start = 0, end = samples.length): number {
  if (end <= start) return 0;
  let sum = 0;
  for (let i = start; i < end; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (end - start));
}

/** Level in dB relative to full scale; silence is clamped to -120 dBFS rather than -Infinity. */
export function dbfs(level: number): number {
  return level > 1e-6 ? 20 * Math.log10(level) : -120;
}
