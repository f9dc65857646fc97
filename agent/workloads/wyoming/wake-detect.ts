// Wyoming's wake role for one connection, as wyoming-openwakeword answers it: `detect` {names?} then
// audio-start, audio-chunk…, audio-stop. Each chunk is converted (any rate, width, channel count → 16 kHz mono,
// the resampler the other roles use) and scored as it arrives; the first frame that makes a detection for one of
// the asked names answers `detection` {name, timestamp}; later ones after each keyword's refractory period answer
// again. audio-stop with no detection answers `not-detected`. Nothing is kept beyond the chunks still waiting for
// the model, and those are bounded.
import { downmix, PIPELINE_RATE, StreamingResampler } from '../audio/pcm.js';
import { WorkloadError } from '../shared/errors.js';
import type { WakeStream } from '../wake/stream.js';
import { decodeIntPcm, sameFormat, type WyomingAudioFormat } from './audio.js';
import type { WyomingEvent } from './codec.js';

export interface WakeDetectDeps {
  send(event: WyomingEvent): Promise<void>;
  /** Reports a failure as the connection's `error` event. */
  error(err: unknown): Promise<void>;
}

/** Audio waiting for the model beyond this is refused: a client sending much faster than real time. */
const MAX_BACKLOG_SECONDS = 30;

export class WakeDetectRun {
  readonly #d: WakeDetectDeps;
  readonly #stream: WakeStream;
  readonly #names: Set<string> | undefined;
  #format: WyomingAudioFormat | undefined;
  #resampler: StreamingResampler | undefined;
  #chain: Promise<void> = Promise.resolve();
  #backlog = 0;
  #detected = false;
  #failed = false;
  /** Client timestamp (ms) of the chunk being scored, when it sends them. */
  #timestamps: Array<{ untilSample: number; ms: number }> = [];
  #queued = 0;

  constructor(stream: WakeStream, names: readonly string[] | undefined, deps: WakeDetectDeps) {
    this.#stream = stream;
    this.#d = deps;
    const known = new Set(stream.keywords.map((k) => k.name));
    if (names !== undefined) {
      const unknown = names.filter((n) => !known.has(n));
      if (unknown.length === names.length && names.length > 0)
        throw new WorkloadError(
          'ENOMODEL',
          `No wake word named ${unknown.join(', ')} on this board; it listens for ${[...known].join(', ')}`,
        );
    }
    this.#names = names && names.length > 0 ? new Set(names) : undefined;
  }

  get started(): boolean {
    return this.#format !== undefined;
  }

  /** The stream's current format (a chunk without one is taken to be in it). */
  get format(): WyomingAudioFormat | undefined {
    return this.#format;
  }

  start(format: WyomingAudioFormat): void {
    this.#format = format;
    this.#resampler = new StreamingResampler(format.rate, PIPELINE_RATE);
  }

  chunk(payload: Buffer, format: WyomingAudioFormat, timestamp: number | undefined): void {
    if (!this.#format || !this.#resampler)
      throw new WorkloadError('ESTATE', 'audio-chunk before audio-start');
    if (this.#failed) return;
    if (!sameFormat(format, this.#format)) {
      // A chunk may change format: a new resampler from there on.
      this.#format = format;
      this.#resampler = new StreamingResampler(format.rate, PIPELINE_RATE);
    }
    const samples = this.#resampler.push(downmix(decodeIntPcm(payload, format)));
    if (this.#backlog + samples.length > MAX_BACKLOG_SECONDS * PIPELINE_RATE)
      throw new WorkloadError(
        'ETOOLARGE',
        `Over ${MAX_BACKLOG_SECONDS} s of audio waiting for the wake-word model: send audio in real time`,
      );
    this.#backlog += samples.length;
    this.#queued += samples.length;
    if (timestamp !== undefined) this.#timestamps.push({ untilSample: this.#queued, ms: timestamp });
    this.#chain = this.#chain.then(() => this.#score(samples));
  }

  async #score(samples: Float32Array): Promise<void> {
    try {
      if (this.#failed) return;
      for (const frame of await this.#stream.push(samples)) {
        for (const d of frame.detections) {
          if (this.#names && !this.#names.has(d.keyword)) continue;
          this.#detected = true;
          await this.#d.send({
            type: 'detection',
            data: { name: d.keyword, timestamp: this.#timestampOf(d.endSample, d.atMs) },
          });
        }
      }
    } catch (err) {
      this.#failed = true;
      await this.#d.error(err);
    } finally {
      this.#backlog -= samples.length;
    }
  }

  /** The client's timestamp for the chunk holding this sample when it sent them, else our stream time. */
  #timestampOf(endSample: number, atMs: number): number {
    while (this.#timestamps.length > 1 && this.#timestamps[0]!.untilSample < endSample)
      this.#timestamps.shift();
    const t = this.#timestamps[0];
    return t !== undefined && t.untilSample >= endSample ? t.ms : Math.round(atMs);
  }

  /** audio-stop: waits for the scoring, then `not-detected` when nothing was. */
  async stop(): Promise<void> {
    const tail = this.#resampler?.flush();
    if (tail && tail.length > 0 && !this.#failed) {
      this.#backlog += tail.length;
      this.#chain = this.#chain.then(() => this.#score(tail));
    }
    await this.#chain;
    if (!this.#detected && !this.#failed) await this.#d.send({ type: 'not-detected', data: {} });
  }
}
