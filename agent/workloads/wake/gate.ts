// The wake word in front of a voice session: idle → wake → listen → turn. While idle, audio goes only to the
// wake-word stream and a short ring buffer; nothing reaches the session (so nothing reaches ASR). A detection
// hands the session the audio from `preRollMs` before the detection onward (the wake word itself, so a request
// spoken without a pause keeps its first word), then everything live until the VAD ends the utterance. No speech
// within `listenTimeoutMs` → idle again. After the reply, an optional follow-up window listens once more without
// the wake word. Times are stream times (samples pushed), so a file runs the same as a microphone.
//
// When the wake model fails (its host died, the slot is being swapped) the gate reports it, goes back to idle
// and retries after `retryMs`; the runtime restarts the host. It never falls through to listening without it.
import { errorMessage } from '../../../lib/errors.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import type { WakeDetection, WakeFrame, WakeStream } from './stream.js';

export type GateState = 'idle' | 'listening' | 'turn';

export type WakeGateEvents = {
  /** The wake word was heard; `preRollMs` of audio before it went to the session with it. */
  wake: WakeDetection & { preRollMs: number };
  state: { state: GateState; atMs: number; reason: string };
  /** Listening ended without speech. */
  'listen-timeout': { atMs: number; waitedMs: number };
  /** Every scored frame (the dashboard's chart). */
  scores: WakeFrame;
  /** The wake model could not score (once per outage); `recovered` when it could again. */
  'wake-error': { atMs: number; message: string };
  'wake-recovered': { atMs: number };
};

/** What the gate needs from a voice session (VoiceSession implements it). */
export interface GatedSession {
  pushAudio(samples: Float32Array): boolean;
  drained(): Promise<void>;
  discardInput(): Promise<void>;
  on(event: 'speech-start', listener: (e: { atMs: number }) => void): () => void;
  on(event: 'speech-discarded', listener: (e: { reason: string }) => void): () => void;
  on(event: 'speech-end', listener: (e: { turn: number }) => void): () => void;
  on(event: 'turn-end', listener: (e: { turn: number }) => void): () => void;
}

export interface WakeGateOptions {
  listenTimeoutMs: number;
  followUpMs: number;
  preRollMs: number;
  /** How long to leave a failed wake model alone before trying again. */
  retryMs?: number;
  /** The wake-word stream; called again after a failure (the slot may have a new model). Throws when none. */
  stream: () => WakeStream;
  /** A keyword that is scored but must not wake the board. */
  wakes?: (keyword: string) => boolean;
}

const RATE = 16000;
const ms = (samples: number) => (samples / RATE) * 1000;
const samplesOf = (ms: number) => Math.round((ms / 1000) * RATE);

export class WakeGate extends TypedEventEmitter<WakeGateEvents> {
  readonly #session: GatedSession;
  readonly #o: WakeGateOptions;
  readonly #off: Array<() => void>;
  #state: GateState = 'idle';
  #pos = 0;
  #ring: Array<{ start: number; samples: Float32Array }> = [];
  #stream: WakeStream | undefined;
  #retryAt = 0;
  #failing = false;
  #listenStart = 0;
  #listenFor = 0;
  #heard = false;
  /** Set while a transition to idle is discarding the session's input; audio waits for it. */
  #settling: Promise<void> = Promise.resolve();

  constructor(session: GatedSession, options: WakeGateOptions) {
    super();
    this.#session = session;
    this.#o = options;
    this.#off = [
      session.on('speech-start', () => {
        if (this.#state === 'listening') this.#heard = true;
      }),
      session.on('speech-discarded', () => {
        if (this.#state === 'listening') this.#heard = false;
      }),
      session.on('speech-end', () => {
        if (this.#state === 'listening') this.#setState('turn', 'speech ended: the request is a turn');
      }),
      session.on('turn-end', () => {
        if (this.#state !== 'turn') return;
        if (this.#o.followUpMs > 0) this.#listen(this.#o.followUpMs, 'follow-up window');
        else this.#idle('turn ended');
      }),
    ];
  }

  get state(): GateState {
    return this.#state;
  }

  /** Stream time: milliseconds of audio pushed so far. */
  get atMs(): number {
    return ms(this.#pos);
  }

  /** 16 kHz mono audio, any chunk size, in order. Returns false when the session wants the caller to wait. */
  async push(chunk: Float32Array): Promise<boolean> {
    await this.#settling;
    const before = this.#state;
    this.#remember(chunk);
    const detection = await this.#score(chunk);
    if (detection && this.#state === 'idle') {
      this.#wake(detection);
      return true;
    }
    // Named again while listening (the follow-up window): the session already has the audio; listen afresh.
    if (detection && this.#state === 'listening') {
      this.emit('wake', { ...detection, preRollMs: 0 });
      this.#listen(this.#o.listenTimeoutMs, `wake word ${detection.keyword}`);
    }
    if (before === 'idle' || this.#state === 'idle') return true;
    const ok = this.#session.pushAudio(chunk);
    if (
      this.#state === 'listening' &&
      !this.#heard &&
      this.#pos - this.#listenStart > samplesOf(this.#listenFor)
    ) {
      const waitedMs = ms(this.#pos - this.#listenStart);
      this.#idle('no speech after the wake word');
      this.emit('listen-timeout', { atMs: this.atMs, waitedMs });
    }
    return ok;
  }

  close(): void {
    for (const off of this.#off) off();
  }

  #remember(chunk: Float32Array): void {
    this.#ring.push({ start: this.#pos, samples: chunk.slice() });
    this.#pos += chunk.length;
    const keep = samplesOf(this.#o.preRollMs) + samplesOf(500);
    while (this.#ring.length > 1 && this.#pos - this.#ring[1]!.start >= keep) this.#ring.shift();
  }

  /** The chunk through the wake stream; the first detection that may wake the board, in gate time. */
  async #score(chunk: Float32Array): Promise<WakeDetection | undefined> {
    if (this.#pos < this.#retryAt) return undefined;
    try {
      this.#stream ??= this.#o.stream();
      const stream = this.#stream;
      // The stream skips chunks while its model fails; map its clock onto ours.
      const offset = this.#pos - chunk.length - stream.samples;
      const frames = await stream.push(chunk);
      if (this.#failing && frames.length > 0) {
        this.#failing = false;
        this.emit('wake-recovered', { atMs: this.atMs });
      }
      let found: WakeDetection | undefined;
      for (const f of frames) {
        const frame = { ...f, endSample: f.endSample + offset, atMs: ms(f.endSample + offset) };
        this.emit('scores', frame);
        for (const d of f.detections)
          if (!found && (this.#o.wakes?.(d.keyword) ?? true))
            found = { ...d, endSample: d.endSample + offset, atMs: ms(d.endSample + offset) };
      }
      return found;
    } catch (err) {
      this.#stream = undefined;
      this.#retryAt = this.#pos + samplesOf(this.#o.retryMs ?? 1000);
      if (!this.#failing) {
        this.#failing = true;
        this.emit('wake-error', { atMs: this.atMs, message: errorMessage(err) });
      }
      if (this.#state === 'listening') this.#idle('the wake model failed');
      return undefined;
    }
  }

  #wake(d: WakeDetection): void {
    const from = Math.max(this.#ring[0]?.start ?? 0, d.endSample - samplesOf(this.#o.preRollMs));
    this.emit('wake', { ...d, preRollMs: ms(d.endSample - from) });
    this.#listen(this.#o.listenTimeoutMs, `wake word ${d.keyword}`);
    // The ring holds everything up to now: from the pre-roll start to the present goes to the session.
    for (const part of this.#ring) {
      const end = part.start + part.samples.length;
      if (end <= from) continue;
      this.#session.pushAudio(part.samples.subarray(Math.max(0, from - part.start)));
    }
  }

  #listen(forMs: number, reason: string): void {
    this.#listenStart = this.#pos;
    this.#listenFor = forMs;
    this.#heard = false;
    this.#setState('listening', reason);
  }

  #idle(reason: string): void {
    this.#setState('idle', reason);
    this.#settling = this.#session.discardInput().catch(() => {});
  }

  #setState(state: GateState, reason: string): void {
    if (state === this.#state) return;
    this.#state = state;
    this.emit('state', { state, atMs: this.atMs, reason });
  }
}
