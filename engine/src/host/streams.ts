// The streams a host pushes and a consumer pulls: a generation's text pieces and a talker's PCM chunks, each
// iterated once; breaking out early cancels the request on the host.
import { EngineError } from '../errors.js';
import {
  emptyDelivery,
  type GenerationDelivery,
  type GenerationResult,
  monotonicUs,
  type SpeechChunk,
} from '../llm.js';

/**
 * Items the host pushes and the consumer pulls, once, as an async iterator. Breaking out of the loop early calls
 * `onBreak` (the request is cancelled on the host); `close` ends the stream, with an error to throw or without.
 */
class PushedStream<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #end: { error?: Error } | undefined;
  #wake: (() => void) | undefined;
  #iterated = false;
  readonly #what: string;
  readonly #onBreak: () => void;

  constructor(what: string, onBreak: () => void) {
    this.#what = what;
    this.#onBreak = onBreak;
  }

  /** @internal */ push(item: T): void {
    this.#items.push(item);
    this.#wake?.();
  }

  /** Drops what was pushed and not yet pulled. */
  protected dropPending(): void {
    this.#items.length = 0;
  }

  /** Ends the stream; false when it had already ended. */
  protected close(error?: Error): boolean {
    if (this.#end) return false;
    this.#end = error ? { error } : {};
    this.#wake?.();
    return true;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    if (this.#iterated) throw new EngineError('ESTATE', `${this.#what} can be iterated only once`);
    this.#iterated = true;
    let finished = false;
    try {
      for (;;) {
        if (this.#items.length > 0) {
          yield this.#items.shift()!;
          continue;
        }
        if (this.#end) {
          finished = true;
          if (this.#end.error) throw this.#end.error;
          return;
        }
        await new Promise<void>((r) => {
          this.#wake = r;
        });
        this.#wake = undefined;
      }
    } finally {
      if (!finished) this.#onBreak();
    }
  }
}

/** How a host generation's tokens travelled: the host's own record plus the channel to this process. */
export interface HostDelivery extends GenerationDelivery {
  /** Sum over pieces of the time from the host's send to this process's receipt (host -> agent). */
  ipcUsSum: number;
  pieces: number;
  messages: number;
}

/** Token pieces pushed by the host, pulled by the consumer. Bounded by the request's maxNewTokens. */
export class HostGeneration extends PushedStream<string> {
  readonly result: Promise<GenerationResult>;
  /** Complete once `result` has settled. */
  readonly delivery: HostDelivery = { ...emptyDelivery(), ipcUsSum: 0, pieces: 0, messages: 0 };
  #settle!: (r: GenerationResult) => void;
  #fail!: (e: Error) => void;

  constructor(onBreak: () => void) {
    super('a generation', onBreak);
    this.result = new Promise<GenerationResult>((resolve, reject) => {
      this.#settle = resolve;
      this.#fail = reject;
    });
    this.result.catch(() => {});
  }

  /** @internal */ pushBatch(pieces: string[], sentUs: number): void {
    const d = this.delivery;
    d.ipcUsSum += pieces.length * (monotonicUs() - sentUs);
    d.pieces += pieces.length;
    d.messages += 1;
    for (const piece of pieces) this.push(piece);
  }

  /** @internal */ finish(result: GenerationResult, delivery?: GenerationDelivery): void {
    if (delivery) Object.assign(this.delivery, delivery);
    this.close();
    this.#settle(result);
  }

  /** @internal */ fail(error: Error): void {
    if (this.close(error)) this.#fail(error);
  }

  async complete(): Promise<GenerationResult> {
    for await (const _ of this) {
      // collected by the host
    }
    return this.result;
  }
}

/**
 * A talker's PCM chunks pushed by the host, pulled by the consumer. The host drains the talker's bounded native
 * queue as it fills, so at most one utterance of audio (seconds of 24 kHz floats) waits here.
 */
export class HostSpeech extends PushedStream<SpeechChunk> {
  readonly #onEnd: () => void;
  #silenced = false;

  constructor(onBreak: () => void, onEnd: () => void = () => {}) {
    super('a speech stream', onBreak);
    this.#onEnd = onEnd;
  }

  /** @internal */ override push(chunk: SpeechChunk): void {
    if (!this.#silenced) super.push(chunk);
  }

  /**
   * @internal Aborted: audio already here or still on its way is dropped (a cut-off reply must not go on playing
   * what was queued on a busy machine); the stream ends when the host confirms the cancel.
   */
  silence(): void {
    this.#silenced = true;
    this.dropPending();
  }

  /** @internal */ end(error?: Error): void {
    if (this.close(error)) this.#onEnd();
  }
}
