// Text generation on the tiny random-weight LLMs, in-process: equality with llm_demo's recorded output,
// abort, stats, tokenizer, int4 external weights, lifecycle.
import { readdirSync, readFileSync } from 'node:fs';
import test from 'ava';
import { EngineError, Llm } from '../../engine/index.js';
import { cpusAllowed } from '../helpers/cpu-list.js';
import { assertLikeRecording, engineOrSkip, expectedOutput, llmDemoText, models } from './_engine.js';

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

if (engineOrSkip(test, 'llm')) {
  test('tiny-llm greedy output equals llm_demo and is deterministic', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const want = expectedOutput('tiny-llm');
    const first = await llm.complete('Hello');
    const second = await llm.complete('Hello');
    t.is(llmDemoText(first.text, first.finishReason), want.text);
    t.is(second.text, first.text);
    t.is(first.finishReason, 'length');
    t.is(first.stats.promptTokens, want.promptTokens);
    t.is(first.stats.generatedTokens, want.decodeTokens);
  });

  test('stats are filled after a generation', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    t.is(llm.lastStats, undefined);
    const pieces: string[] = [];
    const generation = llm.generate('Hello', { maxNewTokens: 5 });
    for await (const piece of generation) pieces.push(piece);
    const { stats, text, finishReason } = await generation.result;
    t.is(text, pieces.join(''));
    t.is(finishReason, 'length');
    t.is(stats.promptTokens, 9);
    t.is(stats.generatedTokens, 5);
    t.true(stats.prefillUs > 0);
    t.true(stats.decodeUs > 0);
    t.is(stats.visionUs, 0);
    t.is(stats.audioUs, 0);
    t.deepEqual(llm.lastStats, stats);
  });

  test('held hand-over: tokens come together in a few batches, with the same text', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const plain = await llm.complete('Hello');
    // Held up to 1 s with room for the whole answer: the tokens come in far fewer batches than tokens, the text is
    // the same. (That the first token is not held shows in bench/engine's time to first token: this model decodes
    // faster than a hand-over to JS, so here even the first batch holds several tokens.)
    const generation = llm.generate('Hello', { readAhead: 256, handoverHoldMs: 1000 });
    const batches: string[][] = [];
    for await (const pieces of generation.batches()) batches.push(pieces);
    const { text } = await generation.result;
    t.is(text, plain.text);
    t.true(batches.length <= 3, `${batches.length} batches`);
    t.is(generation.delivery.tokens, plain.stats.generatedTokens);
    t.throws(() => llm.generate('Hello', { handoverHoldMs: -1 }), {
      message: 'Expected a number from 0 to 1000 for handoverHoldMs but received number -1',
    });
  });

  test('decodeCpus: the decode thread runs on the named CPU alone; a CPU it may not use is a specific error', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const plain = await llm.complete('Hello');
    const allowed = cpusAllowed(readFileSync('/proc/self/status', 'utf8'));
    const cpu = allowed[allowed.length - 1]!;
    // readAhead 1: after the first token the decode thread waits for this loop, so it can be looked at.
    const generation = llm.generate('Hello', { decodeCpus: [cpu], readAhead: 1 });
    let seen: string[] | undefined;
    for await (const _ of generation) {
      seen ??= readdirSync('/proc/self/task').flatMap((tid) => {
        // Another thread of this worker (the last generation's decode thread) may end between the two reads.
        const status = readIfThere(`/proc/self/task/${tid}/status`);
        return status === undefined ? [] : [cpusAllowed(status).join(',')];
      });
    }
    t.is((await generation.result).text, plain.text);
    t.true(seen?.includes(String(cpu)), `a thread on CPU ${cpu} alone among ${seen?.join(' | ')}`);
    // The JS thread stays where it was.
    t.deepEqual(cpusAllowed(readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8')), allowed);

    const offline = llm.generate('Hello', { decodeCpus: [1023] });
    const err = await t.throwsAsync(async () => {
      for await (const _ of offline);
    });
    t.is((err as EngineError).code, 'EINVAL');
    t.regex(
      err?.message ?? '',
      /^Llm\.generate: cannot run the decode thread on CPUs 1023: Invalid argument/,
    );
    t.is((await llm.complete('Hello')).text, plain.text, 'the model is usable after the refusal');
    for (const bad of [[], [-1], [1.5], [1024]]) {
      t.throws(() => llm.generate('Hello', { decodeCpus: bad }), {
        message: /^Expected a non-empty list of CPU ids from 0 to 1023 for decodeCpus but received/,
      });
    }
  });

  test('abort after 3 tokens stops within one more token', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const abort = new AbortController();
    let pieces = 0;
    const generation = llm.generate('Hello', { signal: abort.signal, maxNewTokens: 32 });
    for await (const _ of generation) {
      pieces++;
      if (pieces === 3) abort.abort();
    }
    const result = await generation.result;
    t.is(result.finishReason, 'aborted');
    t.true(
      result.stats.generatedTokens >= 3 && result.stats.generatedTokens <= 4,
      `${result.stats.generatedTokens}`,
    );
    // The model is usable again and still deterministic.
    const again = await llm.complete('Hello');
    t.is(again.text, expectedOutput('tiny-llm').text);
  });

  test('an already aborted signal generates nothing', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const result = await llm.complete('Hello', { signal: AbortSignal.abort() });
    t.is(result.text, '');
    t.is(result.finishReason, 'aborted');
  });

  test('breaking out of the stream releases the model', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    for await (const _ of llm.generate('Hello')) break;
    t.is(llm.lastStats?.finishReason, 'aborted');
    const result = await llm.complete('Hello', { maxNewTokens: 3 });
    t.is(result.stats.generatedTokens, 3);
  });

  test('two generations on one model run one after the other', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const [a, b] = await Promise.all([llm.complete('Hello'), llm.complete('Hello')]);
    t.is(a.text, b.text);
    t.is(a.text, expectedOutput('tiny-llm').text);
  });

  test('chat messages go through the chat template like a prompt string', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const result = await llm.complete([{ role: 'user', content: 'Hello' }]);
    t.is(result.text, expectedOutput('tiny-llm').text);
    t.is(result.stats.promptTokens, 9);
  });

  test('tokenizer encode and decode', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const ids = await llm.encode('<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n');
    t.deepEqual([...ids], [257, 419, 10, 428, 258, 10, 257, 420, 10]);
    t.is(await llm.decode([419, 10, 428]), 'user\nHello');
  });

  test('overrides are MNN config keys: max_new_tokens caps the default length', async (t) => {
    await using llm = await Llm.load(models.tinyLlm, { overrides: { max_new_tokens: 4, thread_num: 2 } });
    t.is(llm.config['thread_num'], 2);
    const result = await llm.complete('Hello');
    t.is(result.stats.generatedTokens, 4);
    t.true(expectedOutput('tiny-llm').text.startsWith(result.text));
  });

  test('reset clears the history', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    await llm.complete('Hello', { maxNewTokens: 2 });
    await llm.reset();
    const result = await llm.complete('Hello');
    t.is(result.text, expectedOutput('tiny-llm').text);
  });

  test('tiny-llm-int4 loads its external 4-bit weights and generates the recorded text', async (t) => {
    await using llm = await Llm.load(models.tinyLlmInt4);
    const want = expectedOutput('tiny-llm-int4');
    const result = await llm.complete('Hello');
    t.is(result.stats.promptTokens, want.promptTokens);
    t.is(result.stats.generatedTokens, want.decodeTokens);
    assertLikeRecording(
      t,
      want,
      llmDemoText(result.text, result.finishReason),
      result.stats.outputIds,
      'tiny-llm-int4',
    );
  });

  test('dispose is idempotent and later calls fail clearly', async (t) => {
    const llm = await Llm.load(models.tinyLlm);
    await Promise.all([llm.dispose(), llm.dispose()]);
    await llm[Symbol.asyncDispose]();
    t.true(llm.disposed);
    const err = t.throws(() => llm.generate('Hello'), { instanceOf: EngineError });
    t.is(err?.message, 'Llm.generate: the model was disposed');
    await t.throwsAsync(() => llm.encode('x'), { message: 'Llm.encode: the model was disposed' });
  });

  test('bad generate options are refused before MNN sees them', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    t.throws(() => llm.generate('Hello', { maxNewTokens: 0 }), {
      message: 'Expected a positive integer for maxNewTokens but received number 0',
    });
    t.throws(() => llm.generate([]), {
      message: 'Expected at least one message for messages but received array(0)',
    });
    t.throws(() => llm.generate('Hello', { images: ['/x.png'] }), {
      message: `${models.tinyLlm} has no vision encoder (is_visual is not set in its config): images cannot be used`,
    });
  });
}
