// The conversation script the prefix-reuse tests run: each request carries the whole conversation (as the OpenAI
// API and voice do) through an edited turn, a changed system prompt, regenerated answers and a barge-in, once with
// reuse and once prefilled whole; every reply must be the same, token for token. Shared by the engine tests
// (x86-64) and the arm64 tier (MNN's Arm82 fp16 backend).
import type { ExecutionContext } from 'ava';
import { type ChatMessage, type GenerationResult, Llm, type LlmLoadOptions } from '../../engine/index.js';

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

export interface Turn {
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

/**
 * Runs the script with reuse and without, on two instances of `config` loaded with `load`; asserts that every
 * turn's reply is the same and returns the reused run's turns.
 */
export async function sameAsFullPrefill(
  t: ExecutionContext,
  config: string,
  firstUser: string,
  extra: object = {},
  load: LlmLoadOptions = {},
): Promise<Turn[]> {
  await using reused = await Llm.load(config, load);
  await using fresh = await Llm.load(config, load);
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
