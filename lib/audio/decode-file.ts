// Audio files of any common format and rate as 16 kHz mono float samples, in chunks: WAV (integer PCM of any
// width, float32, any rate and channel count) is read here; every other format (OGG, FLAC, MP3, Opus, …) goes
// through ffmpeg when it is installed. Channels are averaged and the rate converted (StreamingResampler for WAV,
// ffmpeg's own resampler otherwise): audio of another rate or channel count is converted, never dropped.
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, extname, join } from 'node:path';
import { MnnEdgeError } from '../errors.js';
import { StreamingResampler } from './resample.js';
import { parseWav, WavFormatError } from './wav.js';

export const DECODE_RATE = 16000;

/** Extensions a directory walk takes as audio (a file named explicitly is always tried). */
export const AUDIO_EXTENSIONS = new Set([
  '.wav',
  '.wave',
  '.ogg',
  '.oga',
  '.opus',
  '.flac',
  '.mp3',
  '.m4a',
  '.aac',
  '.wma',
  '.webm',
  '.mka',
  '.aif',
  '.aiff',
  '.au',
]);

/** A file that cannot be read as audio; the message names the file and what is wrong. Code EAUDIO. */
export class AudioDecodeError extends MnnEdgeError {
  constructor(message: string) {
    super('EAUDIO', message);
    this.name = 'AudioDecodeError';
  }
}

export interface DecodeOptions {
  /** ffmpeg's path; null: none (only WAV is read). Default: `ffmpegPath()`. */
  ffmpeg?: string | null;
  /** Samples per chunk handed out (default 16000: one second). */
  chunk?: number;
  /** Only this part of the file, in seconds from its start: ffmpeg seeks to it (a window of a half-hour track
   *  costs a fraction of a second, not the whole track's decode); a WAV is read and cut. */
  part?: { from: number; seconds: number };
}

/** ffmpeg on $PATH (or $MNN_EDGE_FFMPEG), or undefined when it is not installed. */
export function ffmpegPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env['MNN_EDGE_FFMPEG'];
  if (explicit) return explicit;
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'ffmpeg');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export function isWavName(path: string): boolean {
  return ['.wav', '.wave'].includes(extname(path).toLowerCase());
}

/** Averages the channels into one (a stereo recording heard by one microphone). */
export function mixToMono(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0]!;
  const n = channels[0]?.length ?? 0;
  const out = new Float32Array(n);
  for (const c of channels) for (let i = 0; i < n; i++) out[i]! += c[i]! / channels.length;
  return out;
}

function* chunked(audio: Float32Array, size: number): Generator<Float32Array> {
  for (let at = 0; at < audio.length; at += size) yield audio.subarray(at, at + size);
}

function* wavChunks(bytes: Uint8Array, size: number): Generator<Float32Array> {
  const wav = parseWav(bytes);
  const mono = mixToMono(wav.channels);
  if (wav.sampleRate === DECODE_RATE) {
    yield* chunked(mono, size);
    return;
  }
  // Converted in pieces, so a long recording at 48 kHz never needs a second full copy at 16 kHz.
  const r = new StreamingResampler(wav.sampleRate, DECODE_RATE);
  for (const piece of chunked(mono, size * 4)) {
    const out = r.push(piece);
    if (out.length > 0) yield out;
  }
  const tail = r.flush();
  if (tail.length > 0) yield tail;
}

async function* ffmpegChunks(
  path: string,
  ffmpeg: string,
  size: number,
  part?: DecodeOptions['part'],
): AsyncGenerator<Float32Array> {
  // -ss and -t before -i: ffmpeg seeks in the container instead of decoding up to the start.
  const seek = part ? ['-ss', part.from.toFixed(3), '-t', part.seconds.toFixed(3)] : [];
  const child = spawn(
    ffmpeg,
    [
      '-nostdin',
      '-v',
      'error',
      ...seek,
      '-i',
      path,
      '-map',
      '0:a:0',
      '-ac',
      '1',
      '-ar',
      String(DECODE_RATE),
      '-f',
      'f32le',
      '-',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    if (stderr.length < 4000) stderr += d;
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  let carry = Buffer.alloc(0);
  let pending: Float32Array[] = [];
  let pendingLength = 0;
  let total = 0;
  const take = (): Float32Array => {
    const out = new Float32Array(pendingLength);
    let at = 0;
    for (const p of pending) {
      out.set(p, at);
      at += p.length;
    }
    pending = [];
    pendingLength = 0;
    return out;
  };
  try {
    for await (const data of child.stdout as AsyncIterable<Buffer>) {
      const buf = carry.length > 0 ? Buffer.concat([carry, data]) : data;
      const whole = buf.length - (buf.length % 4);
      carry = Buffer.from(buf.subarray(whole));
      // Copied: the stream's buffers are not aligned for a Float32Array view.
      const samples = new Float32Array(whole / 4);
      for (let i = 0; i < samples.length; i++) samples[i] = buf.readFloatLE(i * 4);
      pending.push(samples);
      pendingLength += samples.length;
      total += samples.length;
      if (pendingLength >= size) yield take();
    }
    const code = await exited;
    if (code !== 0) {
      const why = stderr.trim().split('\n').slice(-2).join('; ') || `ffmpeg exited with ${code}`;
      throw new AudioDecodeError(`${path}: ffmpeg could not decode it (${why})`);
    }
    if (pendingLength > 0) yield take();
    if (total === 0) throw new AudioDecodeError(`${path}: no audio stream in it`);
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

/**
 * The file as 16 kHz mono chunks. A WAV this reader does not take (ADPCM, float64) and every other format go to
 * ffmpeg; without ffmpeg such a file is refused with a message saying so. Errors are AudioDecodeErrors naming the
 * file; a decoder that fails part-way has already handed out what it read.
 */
export async function* decodeAudioFile(
  path: string,
  options: DecodeOptions = {},
): AsyncGenerator<Float32Array> {
  const size = options.chunk ?? DECODE_RATE;
  const ffmpeg = options.ffmpeg === undefined ? ffmpegPath() : options.ffmpeg;
  if (isWavName(path)) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(path);
    } catch (err) {
      throw new AudioDecodeError(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`);
    }
    try {
      if (!options.part) {
        yield* wavChunks(bytes, size);
        return;
      }
      const whole: Float32Array[] = [...wavChunks(bytes, DECODE_RATE * 60)];
      const from = Math.round(options.part.from * DECODE_RATE);
      const to = from + Math.round(options.part.seconds * DECODE_RATE);
      let at = 0;
      const cut: Float32Array[] = [];
      for (const c of whole) {
        const lo = Math.max(from - at, 0);
        const hi = Math.min(to - at, c.length);
        if (hi > lo) cut.push(c.subarray(lo, hi));
        at += c.length;
      }
      for (const c of cut) yield* chunked(c, size);
      return;
    } catch (err) {
      if (!(err instanceof WavFormatError)) throw err;
      if (!ffmpeg || !/^Unsupported WAV encoding/.test(err.message))
        throw new AudioDecodeError(
          `${path}: ${err.message}${ffmpeg ? '' : ' (ffmpeg, which reads other WAV encodings, is not installed)'}`,
        );
    }
  }
  if (!ffmpeg)
    throw new AudioDecodeError(
      `${path}: ${extname(path) || 'this format'} needs ffmpeg, which is not installed (WAV is read without it; apt install ffmpeg)`,
    );
  try {
    accessSync(path, constants.R_OK);
  } catch (err) {
    throw new AudioDecodeError(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  yield* ffmpegChunks(path, ffmpeg, size, options.part);
}
