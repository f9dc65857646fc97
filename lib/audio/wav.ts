// WAV (RIFF) reading and writing: the one WAV parser, below every user of it (the workloads, the wake-keyword
// tools, the benches). Reading accepts what microphones, sox and the dashboard produce: integer PCM of
// 8/16/24/32 bits and IEEE float32, plain or WAVE_FORMAT_EXTENSIBLE. Writing produces 16-bit PCM, which every
// player and MNN's audio loader read.
import { MnnEdgeError } from '../errors.js';

/**
 * A byte string that is not a WAV this reader takes; the message says what is wrong with it. Its code is EAUDIO,
 * the code the workloads give bad audio (agent/workloads/shared/errors.ts), so a refused file reads the same
 * wherever it was parsed and nobody has to translate it.
 */
export class WavFormatError extends MnnEdgeError {
  constructor(message: string) {
    super('EAUDIO', message);
    this.name = 'WavFormatError';
  }
}

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

export interface DecodedAudio {
  sampleRate: number;
  /** One array per channel, samples in [-1, 1]. */
  channels: Float32Array[];
}

function readSample(view: DataView, at: number, bits: number, float: boolean): number {
  if (float) return view.getFloat32(at, true);
  switch (bits) {
    case 8:
      return (view.getUint8(at) - 128) / 128;
    case 16:
      return view.getInt16(at, true) / 32768;
    case 24: {
      const v = view.getUint8(at) | (view.getUint8(at + 1) << 8) | (view.getInt8(at + 2) << 16);
      return v / 8388608;
    }
    default:
      return view.getInt32(at, true) / 2147483648;
  }
}

export function parseWav(bytes: Uint8Array): DecodedAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') {
    throw new WavFormatError('Not a WAV file: the RIFF/WAVE header is missing');
  }
  let fmt: { format: number; channels: number; sampleRate: number; bits: number } | undefined;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = tag(offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw new WavFormatError('WAV fmt chunk is truncated');
      let format = view.getUint16(body, true);
      if (format === FORMAT_EXTENSIBLE && size >= 26) format = view.getUint16(body + 24, true);
      fmt = {
        format,
        channels: view.getUint16(body + 2, true),
        sampleRate: view.getUint32(body + 4, true),
        bits: view.getUint16(body + 14, true),
      };
      const float = fmt.format === FORMAT_FLOAT && fmt.bits === 32;
      const pcm = fmt.format === FORMAT_PCM && [8, 16, 24, 32].includes(fmt.bits);
      if (!float && !pcm) {
        throw new WavFormatError(
          `Unsupported WAV encoding (format ${fmt.format}, ${fmt.bits} bits): expected integer PCM of 8/16/24/32 bits or float32`,
        );
      }
      if (fmt.channels < 1) throw new WavFormatError('WAV declares 0 channels');
      if (fmt.sampleRate < 1) throw new WavFormatError('WAV declares a sample rate of 0');
    } else if (id === 'data') {
      if (!fmt) throw new WavFormatError('WAV data chunk comes before its fmt chunk');
      const frameBytes = (fmt.bits / 8) * fmt.channels;
      // Streamed WAVs (arecord to a pipe) carry a size of 0 or 0xFFFFFFFF: take what is there.
      const available = bytes.length - body;
      const dataBytes = size === 0 || size > available ? available : size;
      const frames = Math.floor(dataBytes / frameBytes);
      if (frames === 0) throw new WavFormatError('WAV file contains no audio samples');
      const channels = Array.from({ length: fmt.channels }, () => new Float32Array(frames));
      const float = fmt.format === FORMAT_FLOAT;
      const width = fmt.bits / 8;
      for (let i = 0; i < frames; i++) {
        for (let c = 0; c < fmt.channels; c++) {
          channels[c]![i] = readSample(view, body + i * frameBytes + c * width, fmt.bits, float);
        }
      }
      return { sampleRate: fmt.sampleRate, channels };
    }
    offset = body + size + (size % 2);
  }
  throw new WavFormatError(fmt ? 'WAV file has no data chunk' : 'WAV file has no fmt chunk');
}

/** The 44-byte header of a 16-bit PCM WAV; `dataBytes` 0xFFFFFFFF marks a stream of unknown length. */
export function wavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(dataBytes === 0xffffffff ? 0xffffffff : 36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(FORMAT_PCM, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** Mono 16-bit PCM WAV from s16le bytes. */
export function encodeWavS16(pcm: Uint8Array, sampleRate: number, channels = 1): Buffer {
  return Buffer.concat([wavHeader(sampleRate, channels, pcm.length), pcm]);
}
