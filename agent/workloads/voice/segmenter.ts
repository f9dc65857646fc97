// Turns per-frame speech probabilities into utterances. The rules are Silero's get_speech_timestamps made
// streaming: speech starts at a frame at or above `threshold`; once started, a run of frames below
// `threshold - 0.15` lasting `hangoverMs` ends it at the first quiet frame; utterances shorter than `minSpeechMs`
// are dropped (coughs, clicks); `padMs` of audio is kept on each side; `maxUtteranceMs` cuts a monologue so the
// ASR stage never gets more than it can take.
import { PIPELINE_RATE } from '../audio/pcm.js';

export interface SegmenterOptions {
  threshold: number;
  /** Hysteresis: below this (default threshold − 0.15) a frame counts as silence. */
  negThreshold?: number;
  minSpeechMs: number;
  hangoverMs: number;
  maxUtteranceMs: number;
  padMs: number;
}

export const defaultSegmenterOptions: SegmenterOptions = {
  threshold: 0.5,
  minSpeechMs: 250,
  // Long enough to keep "Hello. What can you see?" as one request; short enough that replies feel prompt.
  hangoverMs: 500,
  maxUtteranceMs: 20_000,
  padMs: 30,
};

export interface Utterance {
  /** Sample indices in the 16 kHz stream, padding included. */
  startSample: number;
  endSample: number;
  samples: Float32Array;
  endedBy: 'silence' | 'max-length' | 'flush';
  /** Audio between the end of the speech and the end decision (the hangover the VAD waited out), ms. */
  decisionMs?: number;
}

export type SegmenterEvent =
  | { type: 'speech-start'; atSample: number }
  | { type: 'utterance'; utterance: Utterance }
  | { type: 'discarded'; startSample: number; endSample: number; reason: 'too-short' };

const ms = (v: number) => Math.round((v * PIPELINE_RATE) / 1000);
/** Room an utterance's buffer starts with (it doubles as needed). */
const INITIAL_MS = 3000;

export class UtteranceSegmenter {
  readonly #opt: Required<SegmenterOptions>;
  /** Recent frames kept before speech starts, for the leading pad. */
  #history: Array<{ start: number; samples: Float32Array }> = [];
  /** The utterance so far, in a buffer that grows by doubling while the user speaks: the end decision hands out a
   *  view on it instead of copying the whole utterance on the turn's critical path (a fresh buffer per utterance,
   *  so the view stays the turn's). */
  #collected = new Float32Array(0);
  #collectedStart = 0;
  #collectedLength = 0;
  #speechStart = -1;
  #quietSince: number | undefined;
  #position = 0;

  constructor(options: Partial<SegmenterOptions> = {}) {
    const merged = { ...defaultSegmenterOptions, ...options };
    this.#opt = { ...merged, negThreshold: merged.negThreshold ?? Math.max(0, merged.threshold - 0.15) };
  }

  get inSpeech(): boolean {
    return this.#speechStart >= 0;
  }

  /** Samples consumed so far (the stream position). */
  get position(): number {
    return this.#position;
  }

  push(frame: Float32Array, probability: number): SegmenterEvent[] {
    const start = this.#position;
    const end = start + frame.length;
    this.#position = end;
    const events: SegmenterEvent[] = [];
    if (this.#speechStart < 0) {
      if (probability >= this.#opt.threshold) {
        this.#speechStart = start;
        this.#quietSince = undefined;
        const from = Math.max(0, start - ms(this.#opt.padMs));
        this.#collected = new Float32Array(ms(INITIAL_MS));
        this.#collectedLength = 0;
        this.#collectedStart = from;
        for (const h of this.#history) {
          const cut = Math.max(0, from - h.start);
          if (cut < h.samples.length) this.#append(h.samples.subarray(cut));
        }
        this.#history = [];
        this.#append(frame);
        events.push({ type: 'speech-start', atSample: from });
      } else {
        this.#remember(start, frame);
      }
      return events;
    }
    this.#append(frame);
    if (probability >= this.#opt.threshold) this.#quietSince = undefined;
    else if (probability < this.#opt.negThreshold && this.#quietSince === undefined) this.#quietSince = start;
    if (this.#quietSince !== undefined && end - this.#quietSince >= ms(this.#opt.hangoverMs)) {
      events.push(this.#finish(Math.min(end, this.#quietSince + ms(this.#opt.padMs)), 'silence', end, frame));
    } else if (end - this.#collectedStart >= ms(this.#opt.maxUtteranceMs)) {
      events.push(this.#finish(end, 'max-length', end, frame));
    }
    return events;
  }

  /** End of input: a running utterance ends where the audio does. */
  flush(): SegmenterEvent[] {
    if (this.#speechStart < 0) return [];
    const end =
      this.#quietSince !== undefined
        ? Math.min(this.#position, this.#quietSince + ms(this.#opt.padMs))
        : this.#position;
    return [this.#finish(end, 'flush', this.#position, undefined)];
  }

  /** Drop any partial utterance (barge-in handled elsewhere, session reset). */
  reset(): void {
    this.#speechStart = -1;
    this.#quietSince = undefined;
    this.#collected = new Float32Array(0);
    this.#collectedLength = 0;
    this.#history = [];
  }

  #remember(start: number, frame: Float32Array): void {
    this.#history.push({ start, samples: frame });
    const keep = ms(this.#opt.padMs) + frame.length;
    while (this.#history.length > 1 && start + frame.length - this.#history[1]!.start >= keep)
      this.#history.shift();
  }

  #append(samples: Float32Array): void {
    const length = this.#collectedLength + samples.length;
    if (length > this.#collected.length) {
      const grown = new Float32Array(Math.max(length, this.#collected.length * 2));
      grown.set(this.#collected.subarray(0, this.#collectedLength));
      this.#collected = grown;
    }
    this.#collected.set(samples, this.#collectedLength);
    this.#collectedLength = length;
  }

  #finish(
    endSample: number,
    endedBy: Utterance['endedBy'],
    streamEnd: number,
    lastFrame: Float32Array | undefined,
  ): SegmenterEvent {
    const startSample = this.#collectedStart;
    const speechStart = this.#speechStart;
    const speechEnd = this.#quietSince ?? streamEnd;
    const all = this.#collected;
    this.reset();
    // The frames after the cut are the next utterance's leading pad.
    if (lastFrame) this.#remember(streamEnd - lastFrame.length, lastFrame);
    if (endedBy !== 'max-length' && speechEnd - speechStart < ms(this.#opt.minSpeechMs)) {
      return { type: 'discarded', startSample, endSample, reason: 'too-short' };
    }
    const decisionMs = ((streamEnd - speechEnd) / PIPELINE_RATE) * 1000;
    return {
      type: 'utterance',
      utterance: {
        startSample,
        endSample,
        samples: all.subarray(0, endSample - startSample),
        endedBy,
        ...(endedBy === 'silence' ? { decisionMs } : {}),
      },
    };
  }
}
