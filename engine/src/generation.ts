// A generation's token stream as the caller sees it: batches of text pieces from the decode thread, the credits
// that let it run ahead, and how the tokens travelled (GenerationDelivery). The Llm that starts one is llm.ts.
import { EngineError } from './errors.js';
import type { FinishReason, NativeLlmStats, NativeTokenBatch } from './native.js';

/**
 * How a generation's tokens travelled, on CLOCK_MONOTONIC microseconds (process.hrtime, the same clock in every
 * process of the machine), so that each layer's cost per token can be told apart.
 */
export interface GenerationDelivery {
  /** Tokens the decode thread handed over, and in how many batches. */
  tokens: number;
  batches: number;
  /** When generate() was called, and when the decode thread had the first and the last token. */
  startUs: number;
  firstTokenUs: number;
  lastTokenUs: number;
  /** Sum over tokens of the time from decode to the JS callback that received it (addon -> JS). */
  handoffUsSum: number;
  /** Time the decode thread waited for the consumer (its read-ahead window full); ~0 when JS keeps up. */
  creditWaitUs: number;
}

export function emptyDelivery(): GenerationDelivery {
  return {
    tokens: 0,
    batches: 0,
    startUs: 0,
    firstTokenUs: 0,
    lastTokenUs: 0,
    handoffUsSum: 0,
    creditWaitUs: 0,
  };
}

/** CLOCK_MONOTONIC in microseconds, the clock the addon stamps tokens with. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

export function recordBatch(d: GenerationDelivery, b: NativeTokenBatch): void {
  d.creditWaitUs = Math.max(d.creditWaitUs, b.creditWaitUs ?? 0);
  if (b.tokens === 0) return;
  const now = monotonicUs();
  if (d.tokens === 0) d.firstTokenUs = b.firstUs;
  d.tokens += b.tokens;
  d.batches += 1;
  d.lastTokenUs = b.lastUs;
  d.handoffUsSum += b.tokens * now - b.producedUsSum;
}

/** Batches from the native callback, waiting for the generator that takes them. */
export class BatchInbox {
  readonly #queue: NativeTokenBatch[] = [];
  #wake: (() => void) | undefined;

  put = (batch: NativeTokenBatch): void => {
    this.#queue.push(batch);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  };

  async take(): Promise<NativeTokenBatch> {
    while (this.#queue.length === 0) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    return this.#queue.shift()!;
  }
}

export type GenerationStats = NativeLlmStats;

export interface GenerationResult {
  text: string;
  finishReason: FinishReason;
  stats: GenerationStats;
}

export type BatchRun = (
  settle: (r: GenerationResult) => void,
  delivery: GenerationDelivery,
) => AsyncGenerator<string[], void, undefined>;

/**
 * A stream of UTF-8-whole text pieces; `result` settles when the stream ends (also when broken off early).
 * Iterate it for one piece per token, or through batches() for every piece that is ready at once.
 */
export class LlmGeneration implements AsyncIterable<string> {
  readonly result: Promise<GenerationResult>;
  /** Filled as tokens arrive; complete once the stream has ended. */
  readonly delivery: GenerationDelivery = emptyDelivery();
  readonly #batches: AsyncGenerator<string[], void, undefined>;
  readonly #ack: (tokens: number) => void;
  #iterated = false;

  constructor(run: BatchRun, ack: (tokens: number) => void) {
    let settle!: (r: GenerationResult) => void;
    let fail!: (e: unknown) => void;
    this.result = new Promise<GenerationResult>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    // The error also surfaces through iteration; this keeps an unobserved `result` from crashing the process.
    this.result.catch(() => {});
    this.#ack = ack;
    const batches = run(settle, this.delivery);
    this.#batches = (async function* () {
      try {
        yield* batches;
      } catch (err) {
        fail(err);
        throw err;
      }
    })();
  }

  /** One piece per token; taking a piece lets the decode thread run one token further. */
  async *[Symbol.asyncIterator](): AsyncGenerator<string, void, undefined> {
    for await (const pieces of this.#take()) {
      for (const piece of pieces) {
        this.#ack(1);
        if (piece) yield piece;
      }
    }
  }

  /** Every piece decoded since the last batch, at once (never empty). */
  async *batches(): AsyncGenerator<string[], void, undefined> {
    for await (const pieces of this.#take()) {
      this.#ack(pieces.length);
      const text = pieces.filter((p) => p.length > 0);
      if (text.length > 0) yield text;
    }
  }

  /** Consumes the stream and returns the whole result. */
  async complete(): Promise<GenerationResult> {
    for await (const _ of this.batches()) {
      // pieces are collected by the generation itself
    }
    return this.result;
  }

  #take(): AsyncGenerator<string[], void, undefined> {
    if (this.#iterated) throw new EngineError('ESTATE', 'a generation can be iterated only once');
    this.#iterated = true;
    return this.#batches;
  }
}
