// Conversation KV reuse: a turn keeps the KV of its longest common token prefix with what the model holds and
// prefills only the rest. Every reply must equal, token for token, the reply to the same conversation prefilled
// whole, on every LLM fixture, through edits, a changed system prompt, a regenerated answer and a barge-in.
import test from 'ava';
import { type ChatMessage, EngineError, type GenerationResult, Llm } from '../../engine/index.js';
import { engineOrSkip, media, models } from './_engine.js';

type Step =
  | { kind: 'turn'; user: string }
  | { kind: 'edit-first-user'; user: string }
  | { kind: 'system'; text: string }
  | { kind: 'regenerate' }
  | { kind: 'barge-in'; user: string; pieces: number };

const SCRIPT: Step[] = [
  { kind: 'turn', user: 'Hello, who are you?' },
  { kind: 'turn', user: 'Tell me about the weather today.' },
  { kind: 'turn', user: 'And tomorrow?' },
  { kind: 'edit-first-user', user: 'Hi there, what is your name?' },
  // Once found on tiny-llm-int4 only: regenerating with a one-token prefill changed the answer.
  { kind: 'regenerate' },
  { kind: 'system', text: 'You are a terse assistant on a dev board.' },
  { kind: 'regenerate' },
  { kind: 'barge-in', user: 'Count from one to twenty please.', pieces: 3 },
  { kind: 'turn', user: 'Stop. Just say yes.' },
];

interface Turn {
  /** The reply as the user got it (cut after `pieces` pieces for a barge-in). */
  text: string;
  result: GenerationResult;
  /** The generated token ids (the first `pieces` of them for a barge-in). */
  ids: number[];
  cut: boolean;
}

/** Runs the script on `llm`; each request carries the whole conversation, as the OpenAI API and voice do. */
async function runScript(
  llm: Llm,
  firstUser: string,
  reusePrefix: boolean,
  extra: object = {},
): Promise<Turn[]> {
  const turns: Turn[] = [];
  let system = 'You are a helpful assistant.';
  const history: ChatMessage[] = [];
  const ask = async (pieces?: number): Promise<string> => {
    const abort = new AbortController();
    const messages: ChatMessage[] = [{ role: 'system', content: system }, ...history];
    const generation = llm.generate(messages, {
      reusePrefix,
      maxNewTokens: 12,
      signal: abort.signal,
      ...extra,
    });
    const heard: string[] = [];
    for await (const piece of generation) {
      if (pieces === undefined || heard.length < pieces) heard.push(piece);
      if (pieces !== undefined && heard.length >= pieces) abort.abort();
    }
    const result = await generation.result;
    const text = heard.join('');
    const ids = [...(result.stats.outputIds ?? [])].slice(0, pieces ?? Number.POSITIVE_INFINITY);
    turns.push({ text, result, ids, cut: pieces !== undefined });
    return text;
  };
  for (const step of SCRIPT) {
    if (step.kind === 'turn' || step.kind === 'barge-in') {
      history.push({ role: 'user', content: turns.length === 0 ? firstUser : step.user });
      // A barge-in: the user heard only what had been said; that is the history from now on.
      history.push({
        role: 'assistant',
        content: await ask(step.kind === 'barge-in' ? step.pieces : undefined),
      });
      continue;
    }
    // Edit, system prompt, regenerate: the last answer is dropped and asked for again.
    if (step.kind === 'edit-first-user') {
      // The text after any media tag changes; the media stay.
      history[0] = { role: 'user', content: history[0]!.content.replace(/[^>]*$/, step.user) };
    } else if (step.kind === 'system') {
      system = step.text;
    }
    history.pop();
    history.push({ role: 'assistant', content: await ask() });
  }
  return turns;
}

async function sameAsFullPrefill(
  t: import('ava').ExecutionContext,
  config: string,
  firstUser: string,
  extra: object = {},
): Promise<Turn[]> {
  await using reused = await Llm.load(config);
  await using fresh = await Llm.load(config);
  const a = await runScript(reused, firstUser, true, extra);
  const b = await runScript(fresh, firstUser, false, extra);
  t.is(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    t.true(a[i]!.ids.length > 0, `turn ${i + 1}: generated something`);
    t.is(a[i]!.text, b[i]!.text, `turn ${i + 1}: text`);
    t.deepEqual(a[i]!.ids, b[i]!.ids, `turn ${i + 1}: token ids`);
    if (!a[i]!.cut) {
      t.is(a[i]!.result.text, b[i]!.result.text, `turn ${i + 1}: whole text`);
      t.is(a[i]!.result.stats.generatedTokens, b[i]!.result.stats.generatedTokens, `turn ${i + 1}: tokens`);
    }
    t.is(a[i]!.result.stats.promptTokens, b[i]!.result.stats.promptTokens, `turn ${i + 1}: prompt`);
    t.is(b[i]!.result.stats.reuse?.outcome, 'miss');
    t.is(b[i]!.result.stats.reuse?.prefilledTokens, b[i]!.result.stats.promptTokens);
  }
  return a;
}

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
