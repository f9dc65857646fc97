// Conversation KV reuse: a turn keeps the KV of its longest common token prefix with what the model holds and
// prefills only the rest. Every reply must equal, token for token, the reply to the same conversation prefilled
// whole, on every LLM fixture, through edits, a changed system prompt, a regenerated answer and a barge-in.
import test from 'ava';
import { type ChatMessage, EngineError, Llm } from '../../engine/index.js';
import { engineOrSkip, media, models } from './_engine.js';
import { sameAsFullPrefill } from './_prefix-reuse-script.js';

if (engineOrSkip(test, 'prefix-reuse')) {
  test('tiny-llm: every turn equals a full prefill; later turns prefill only what is new', async (t) => {
    const turns = await sameAsFullPrefill(t, models.tinyLlm, 'Hello, who are you?');
    const reuse = turns.map((x) => x.result.stats.reuse!);
    t.is(reuse[0]!.outcome, 'miss');
    t.is(reuse[0]!.reason, 'cold');
    // Turns 2 and 3 extend the conversation: at least the system prompt and the first turn are kept.
    for (const i of [1, 2]) {
      // A hit keeps the whole previous prompt; the previous answer is prefilled again with the new question.
      t.is(reuse[i]!.outcome, 'hit', `turn ${i + 1}`);
      t.is(reuse[i]!.reusedTokens, turns[i - 1]!.result.stats.promptTokens);
      t.true(
        reuse[i]!.reusedTokens > reuse[0]!.prefilledTokens / 2,
        `turn ${i + 1} kept ${reuse[i]!.reusedTokens}`,
      );
      t.is(reuse[i]!.reusedTokens + reuse[i]!.prefilledTokens, turns[i]!.result.stats.promptTokens);
    }
    // The edited first user turn breaks the prefix inside it: the system prompt's tokens are still kept.
    t.is(reuse[3]!.outcome, 'partial');
    t.is(reuse[3]!.reason, 'diverged');
    t.true(reuse[3]!.reusedTokens < reuse[0]!.prefilledTokens);
    // A regenerated answer: the whole prompt is held; only its last two tokens are prefilled again.
    for (const i of [4, 6]) {
      t.is(reuse[i]!.reason, 'regenerate');
      t.is(reuse[i]!.prefilledTokens, 2);
    }
  });

  test('tiny-llm-int4: every turn equals a full prefill', async (t) => {
    await sameAsFullPrefill(t, models.tinyLlmInt4, 'Hello, who are you?');
  });

  test('with an MNN prefill chunk the kept KV ends on a chunk boundary; every turn equals a full prefill', async (t) => {
    // MNN prefills in chunks counted from where a prefill starts; keeping KV to a boundary makes a reused prefill
    // compute the same chunks as a whole one (what keeps reuse exact on the Arm82 fp16 backend, arm82ExactChunk).
    for (const model of [models.tinyLlm, models.tinyLlmInt4]) {
      const turns = await sameAsFullPrefill(t, model, 'Hello, who are you?', {}, { overrides: { chunk: 8 } });
      const reuse = turns.map((x) => x.result.stats.reuse!);
      for (const [i, r] of reuse.entries()) {
        t.is(r.chunkTokens, 8, `turn ${i + 1}`);
        t.is(r.reusedTokens % 8, 0, `turn ${i + 1} kept ${r.reusedTokens}`);
      }
      // Turns 2 and 3 extend the conversation: the previous prompt is kept up to its last chunk boundary.
      for (const i of [1, 2]) {
        t.is(reuse[i]!.outcome, 'hit', `turn ${i + 1}`);
        const previous = turns[i - 1]!.result.stats.promptTokens;
        t.is(reuse[i]!.reusedTokens, previous - (previous % 8), `turn ${i + 1}`);
        t.true(reuse[i]!.reusedTokens > 0, `turn ${i + 1}`);
      }
    }
  });

  test('tiny-vlm: an image in an earlier turn; every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(t, models.tinyVlm, `<img>${media.red}</img>What is this?`, {
      mediaTags: true,
    });
    // The KV is kept up to the image, never past it (MNN assigns encoder outputs in prompt order).
    t.is(turns[1]!.result.stats.reuse!.reason, 'media');
    t.true(turns[1]!.result.stats.reuse!.reusedTokens > 0);
    t.true(turns[1]!.result.stats.visionUs > 0);
  });

  test('tiny-omni-audio: audio in an earlier turn; every turn equals a full prefill', async (t) => {
    const turns = await sameAsFullPrefill(
      t,
      models.tinyOmniAudio,
      `<audio>${media.speech16k}</audio>Answer this.`,
      {
        mediaTags: true,
      },
    );
    t.is(turns[1]!.result.stats.reuse!.reason, 'media');
  });

  test('a prompt that fills the context fails the same way with a held prefix as without', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const first: ChatMessage[] = [{ role: 'user', content: 'Hello' }];
    const r = await llm.complete(first, { maxNewTokens: 4 });
    const long: ChatMessage[] = [
      ...first,
      { role: 'assistant', content: r.text },
      { role: 'user', content: 'word '.repeat(200) },
    ];
    const errors: EngineError[] = [];
    for (const reusePrefix of [true, false]) {
      const err = await t.throwsAsync(() => llm.complete(long, { reusePrefix, contextTokens: 64 }), {
        instanceOf: EngineError,
      });
      errors.push(err as EngineError);
    }
    t.is(errors[0]!.code, 'ECONTEXT');
    t.is(errors[0]!.message, errors[1]!.message);
    t.regex(
      errors[0]!.message,
      /the prompt is \d+ tokens, which leaves no room to answer in the 64-token context/,
    );
    // The model is fine afterwards and starts cold (the failed request dropped nothing it should not have).
    const again = await llm.complete(first, { maxNewTokens: 4 });
    t.is(again.text, r.text);
  });

  test('reset() and eraseHistory() keep the held tokens true to the KV', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const msgs: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];
    const a = await llm.complete(msgs, { maxNewTokens: 6 });
    await llm.reset();
    const b = await llm.complete(msgs, { maxNewTokens: 6 });
    t.is(b.text, a.text);
    t.is(b.stats.reuse?.reason, 'cold');
    await llm.eraseHistory(3);
    const c = await llm.complete(msgs, { maxNewTokens: 6 });
    t.is(c.text, a.text);
    t.is(c.stats.reuse?.reusedTokens, 3);
  });
}
