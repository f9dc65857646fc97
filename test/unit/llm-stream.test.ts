// The JS side of the native decode thread's contract, against a scripted stand-in for the addon: how far the
// decoder may run ahead of the consumer (readAhead), one piece per token or whole batches, breaking off,
// failures, and the delivery record. The real thread runs in test/engine (llm.test.ts, host.test.ts).
import test from 'ava';
import { EngineError, Llm } from '../../engine/index.js';
import type {
  EngineAddon,
  NativeLlmHandle,
  NativePrefillRequest,
  NativeTokenBatch,
} from '../../engine/src/native.js';

interface Script {
  tokens: string[];
  /** Fail with this error after this many tokens. */
  failAfter?: { tokens: number; error: Error };
}

/**
 * Decodes the script's tokens one per macrotask, at most `window` ahead of ack(), handing every token made
 * while the last batch was undelivered over together (as the native channel does).
 */
class ScriptedHandle {
  aheadSeen = 0;
  decoded = 0;
  #script: Script;
  #acked = 0;
  #cancel = false;
  #pending: NativeTokenBatch | undefined;
  #deliver: ((b: NativeTokenBatch) => void) | undefined;
  #window = 1;
  #busy = false;

  constructor(script: Script) {
    this.#script = script;
  }

  configJson(): string {
    return JSON.stringify({ backend_type: 'cpu', max_new_tokens: 16 });
  }
  async load(): Promise<{ readUs: number; readBytes: number; loadUs: number }> {
    return { readUs: 1000, readBytes: 10, loadUs: 2000 };
  }
  generate(request: NativePrefillRequest, window: number, onBatch: (b: NativeTokenBatch) => void): void {
    if (this.#busy) throw Object.assign(new Error('busy'), { code: 'EBUSY' });
    this.#busy = true;
    this.#window = window;
    this.#deliver = onBatch;
    this.#acked = 0;
    this.decoded = 0;
    this.#cancel = false;
    const limit = Math.min(request.maxNewTokens, this.#script.tokens.length);
    const step = () => {
      if (this.#cancel) return this.#finish('aborted');
      if (this.decoded - this.#acked >= this.#window) return void setTimeout(step, 1);
      const fail = this.#script.failAfter;
      if (fail && this.decoded === fail.tokens) return this.#finish(null, fail.error);
      const piece = this.#script.tokens[this.decoded]!;
      this.decoded++;
      this.aheadSeen = Math.max(this.aheadSeen, this.decoded - this.#acked);
      this.#put(piece);
      if (this.decoded >= limit) return this.#finish('length');
      setImmediate(step);
    };
    setImmediate(step);
  }
  ack(tokens: number): void {
    this.#acked += tokens;
  }
  cancel(): void {
    this.#cancel = true;
  }
  stats() {
    return {
      promptTokens: 3,
      generatedTokens: this.decoded,
      historyTokens: 3 + this.decoded,
      prefillUs: 1,
      decodeUs: 1,
      sampleUs: 1,
      visionUs: 0,
      audioUs: 0,
      ttfaUs: 0,
      audioInputSeconds: 0,
      finishReason: null,
    };
  }
  async dispose(): Promise<void> {}

  #batch(): NativeTokenBatch {
    this.#pending ??= {
      pieces: [],
      tokens: 0,
      producedUsSum: 0,
      firstUs: 0,
      lastUs: 0,
      done: false,
      reason: null,
      error: null,
    };
    return this.#pending;
  }
  #put(piece: string): void {
    const b = this.#batch();
    const now = Number(process.hrtime.bigint()) / 1000;
    if (b.tokens === 0) b.firstUs = now;
    b.pieces.push(piece);
    b.tokens++;
    b.producedUsSum += now;
    b.lastUs = now;
    this.#schedule();
  }
  #finish(reason: NativeTokenBatch['reason'], error: Error | null = null): void {
    const b = this.#batch();
    b.done = true;
    b.reason = reason;
    b.error = error;
    this.#schedule();
  }
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setTimeout(() => {
      this.#scheduled = false;
      const b = this.#pending!;
      this.#pending = undefined;
      if (b.done) this.#busy = false;
      this.#deliver!(b);
    }, 0);
  }
  #scheduled = false;
}

async function load(script: Script): Promise<{ llm: Llm; handle: ScriptedHandle }> {
  const handle = new ScriptedHandle(script);
  const addon = {
    LlmHandle: function LlmHandle() {
      return handle;
    },
    checkBackend: () => {},
  } as unknown as EngineAddon;
  const llm = await Llm.load('/models/scripted/config.json', { addon });
  return { llm, handle: handle as ScriptedHandle & NativeLlmHandle };
}

const ten = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];

test('one piece per token; with the default read-ahead the decoder is never more than one token ahead', async (t) => {
  const { llm, handle } = await load({ tokens: ten });
  const pieces: string[] = [];
  for await (const piece of llm.generate('Hi', { maxNewTokens: 10 })) {
    pieces.push(piece);
    await new Promise((r) => setTimeout(r, 3)); // a slow consumer
  }
  t.deepEqual(pieces, ten);
  t.is(handle.aheadSeen, 1);
  t.is(llm.lastStats?.finishReason, 'length');
  t.deepEqual(llm.loadTiming, { readMs: 1, readBytes: 10, mnnLoadMs: 2 });
});

test('batches() hands over every piece that is ready; readAhead bounds how far the decoder runs', async (t) => {
  const { llm, handle } = await load({ tokens: ten });
  const generation = llm.generate('Hi', { maxNewTokens: 10, readAhead: 4 });
  const batches: string[][] = [];
  for await (const batch of generation.batches()) {
    batches.push(batch);
    await new Promise((r) => setTimeout(r, 20)); // the decoder fills the window meanwhile
  }
  t.deepEqual(batches.flat(), ten);
  t.true(
    batches.some((b) => b.length > 1),
    JSON.stringify(batches),
  );
  t.true(handle.aheadSeen <= 4, `${handle.aheadSeen}`);
  const { text } = await generation.result;
  t.is(text, ten.join(''));
  t.is(generation.delivery.tokens, 10);
  t.is(generation.delivery.batches, batches.length);
  t.true(generation.delivery.handoffUsSum >= 0);
  t.true(generation.delivery.firstTokenUs >= generation.delivery.startUs);
});

test('incomplete characters ("" pieces) are not yielded but still let the decoder go on', async (t) => {
  const { llm } = await load({ tokens: ['a', '', '', 'é', 'b'] });
  const pieces: string[] = [];
  for await (const piece of llm.generate('Hi', { maxNewTokens: 5 })) pieces.push(piece);
  t.deepEqual(pieces, ['a', 'é', 'b']);
});

test('breaking off cancels the decoder, waits for its end and frees the model', async (t) => {
  const { llm, handle } = await load({ tokens: ten });
  for await (const _ of llm.generate('Hi', { maxNewTokens: 10 })) break;
  t.is(llm.lastStats?.finishReason, 'aborted');
  t.true(handle.decoded <= 2, `${handle.decoded}`);
  const again = await llm.complete('Hi', { maxNewTokens: 3 });
  t.is(again.text, 'abc');
});

test('a failure of the decoder surfaces from the stream and from result, with its code', async (t) => {
  const error = Object.assign(new Error('MNN Llm::generate (decode step) failed'), { code: 'EENGINE' });
  const { llm } = await load({ tokens: ten, failAfter: { tokens: 2, error } });
  const generation = llm.generate('Hi', { maxNewTokens: 10 });
  const pieces: string[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const piece of generation) pieces.push(piece);
  });
  t.true(err instanceof EngineError);
  t.is((err as EngineError).code, 'EENGINE');
  t.deepEqual(pieces, ['a', 'b']);
  await t.throwsAsync(generation.result, { message: 'MNN Llm::generate (decode step) failed' });
  t.is((await llm.complete('Hi', { maxNewTokens: 2 })).text, 'ab');
});

test('readAhead must be an integer from 1 to 256', async (t) => {
  const { llm } = await load({ tokens: ten });
  t.throws(() => llm.generate('Hi', { readAhead: 0 }), {
    message: 'Expected an integer from 1 to 256 for readAhead but received number 0',
  });
  t.throws(() => llm.generate('Hi', { readAhead: 1.5 }), { message: /readAhead/ });
});
