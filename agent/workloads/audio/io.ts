// Where the board's own voice session gets audio and sends it: ALSA through `arecord`/`aplay` (alsa-utils, on
// every image), or WAV files (tests, demos, batch transcription). The dashboard's audio travels over the
// WebSocket instead (agent/workloads/voice/socket.ts).
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { encodeWavS16, parseWav } from '../../../lib/audio/wav.js';
import { writeFileDurable } from '../../../lib/durable-fs.js';
import { WorkloadError } from '../shared/errors.js';
import { floatToS16le, PcmToPipeline, PIPELINE_RATE, resample, toPipelineAudio } from './pcm.js';

/** 16 kHz mono float chunks. */
export type AudioSource = AsyncIterable<Float32Array>;

export interface AudioSink {
  write(samples: Float32Array, sampleRate: number): void;
  /** Drop whatever is queued for playback (barge-in). */
  flush(): void;
  close(): Promise<void>;
}

/** A WAV file of any supported encoding, converted and cut into chunks of `chunkMs`. */
export async function* wavFileSource(path: string, chunkMs = 100): AudioSource {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new WorkloadError('EAUDIO', `Cannot read WAV file ${path}: ${(err as Error).message}`);
  }
  const wav = parseWav(bytes);
  const samples = toPipelineAudio(wav.channels, wav.sampleRate);
  const step = Math.round((chunkMs * PIPELINE_RATE) / 1000);
  for (let at = 0; at < samples.length; at += step) yield samples.subarray(at, at + step);
}

function toolError(command: string, err: Error): WorkloadError {
  return new WorkloadError(
    'ETOOL',
    `Cannot run ${command}: ${err.message}${(err as NodeJS.ErrnoException).code === 'ENOENT' ? ' (install alsa-utils)' : ''}`,
  );
}

/** The microphone through `arecord` (raw s16le at 16 kHz mono, so ALSA's plug layer does any conversion). */
export async function* arecordSource(device: string, signal: AbortSignal, command = 'arecord'): AudioSource {
  const child = spawn(
    command,
    ['-q', '-D', device, '-t', 'raw', '-f', 'S16_LE', '-r', String(PIPELINE_RATE), '-c', '1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const failed = new Promise<never>((_, reject) =>
    child.once('error', (err) => reject(toolError(command, err))),
  );
  failed.catch(() => {});
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-500);
  });
  const onAbort = () => child.kill('SIGTERM');
  signal.addEventListener('abort', onAbort, { once: true });
  const conv = new PcmToPipeline({ sampleRate: PIPELINE_RATE, channels: 1, format: 's16le' });
  let carry = Buffer.alloc(0);
  try {
    for await (const data of child.stdout as AsyncIterable<Buffer>) {
      const bytes = carry.length > 0 ? Buffer.concat([carry, data]) : data;
      const whole = bytes.length - (bytes.length % 2);
      carry = Buffer.from(bytes.subarray(whole));
      if (whole > 0) yield conv.push(bytes.subarray(0, whole));
    }
    const code = await Promise.race([
      failed,
      new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) resolve(child.exitCode);
        else child.once('close', resolve);
      }),
    ]);
    if (!signal.aborted && code !== 0) {
      throw new WorkloadError('ETOOL', `${command} -D ${device} exited with code ${code}: ${stderr.trim()}`);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (child.exitCode === null) child.kill('SIGTERM');
  }
}

/** The speaker through `aplay`; one process per sample rate, restarted on flush so queued audio stops at once. */
export class AplaySink implements AudioSink {
  readonly #device: string;
  readonly #command: string;
  #child: ChildProcessByStdio<Writable, null, Readable> | undefined;
  #rate = 0;

  constructor(device: string, command = 'aplay') {
    this.#device = device;
    this.#command = command;
  }

  write(samples: Float32Array, sampleRate: number): void {
    if (!this.#child || this.#rate !== sampleRate) {
      this.#stop();
      this.#rate = sampleRate;
      const child = spawn(
        this.#command,
        ['-q', '-D', this.#device, '-t', 'raw', '-f', 'S16_LE', '-r', String(sampleRate), '-c', '1'],
        { stdio: ['pipe', 'ignore', 'pipe'] },
      );
      child.on('error', () => {});
      child.stdin.on('error', () => {});
      this.#child = child;
    }
    this.#child.stdin.write(floatToS16le(samples));
  }

  flush(): void {
    this.#stop();
  }

  async close(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child) return;
    await new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.stdin.end();
    });
  }

  #stop(): void {
    this.#child?.kill('SIGKILL');
    this.#child = undefined;
  }
}

/** Collects the reply audio and writes one 16-bit WAV at close (durably), at the rate of the first chunk. */
export class WavFileSink implements AudioSink {
  readonly path: string;
  readonly #chunks: Float32Array[] = [];
  #rate = 0;

  constructor(path: string) {
    this.path = path;
  }

  write(samples: Float32Array, sampleRate: number): void {
    if (this.#rate === 0) this.#rate = sampleRate;
    this.#chunks.push(
      sampleRate === this.#rate ? samples.slice() : resample(samples, sampleRate, this.#rate),
    );
  }

  /** A WAV keeps everything; barge-in only matters for live playback. */
  flush(): void {}

  async close(): Promise<void> {
    const total = this.#chunks.reduce((n, c) => n + c.length, 0);
    const all = new Float32Array(total);
    let at = 0;
    for (const c of this.#chunks) {
      all.set(c, at);
      at += c.length;
    }
    writeFileDurable(this.path, encodeWavS16(floatToS16le(all), this.#rate || PIPELINE_RATE));
  }
}
