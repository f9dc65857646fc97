// One 16-turn conversation through engine hosts, turn by turn (bench/conversation's parts (1) and (2)): the
// questions, a turn's TTFT and what its prefill reused, and the per-turn median over rounds.
import type { ChatMessage, EngineHostClient, Llm } from '../../engine/index.js';
import { summarize } from './stats.js';

export const TURNS = 16;
export const SYSTEM = 'You are the voice assistant of a small board. Answer briefly and clearly.';

/** A user message of about `tokens` tokens on this model's tokenizer (its words are whatever it splits). */
export async function userMessage(llm: Llm, turn: number, tokens: number): Promise<string> {
  const words = ['please', 'tell', 'me', 'about', 'the', 'board', 'and', 'its', 'sensors', 'today', 'now'];
  let text = `Turn ${turn}:`;
  for (let i = 0; ; i++) {
    const next = `${text} ${words[(i + turn) % words.length]}`;
    if ((await llm.encode(next)).length > tokens) return text;
    text = next;
  }
}

export interface TurnSample {
  ttftMs: number;
  /** MNN's own prefill time in the host (the rest of the TTFT is templating, tokenizing, the first decode step
   *  and the hand-overs). */
  prefillMs: number;
  prefilled: number;
  prompt: number;
  text: string;
  /** hit / partial / miss, with the reason. */
  outcome: string;
  /** The host's conversation contexts after the turn, in words. */
  contexts: string;
}

export async function ask(
  host: EngineHostClient,
  messages: ChatMessage[],
  reusePrefix: boolean,
): Promise<TurnSample> {
  const t0 = performance.now();
  const gen = host.generate(messages, { maxNewTokens: 20, reusePrefix });
  let ttftMs = Number.NaN;
  for await (const _ of gen) if (Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
  const r = await gen.result;
  const reuse = r.stats.reuse;
  const c = reuse?.contexts;
  return {
    ttftMs,
    prefillMs: r.stats.prefillUs / 1000,
    prefilled: reuse?.prefilledTokens ?? r.stats.promptTokens,
    prompt: r.stats.promptTokens,
    text: r.text,
    outcome: reuse ? `${reuse.outcome}${reuse.reason ? ` (${reuse.reason})` : ''}` : '?',
    contexts: c
      ? `${c.count} contexts, snapshots ${(c.snapshotBytes / 1024 / 1024).toFixed(1)} MiB of ${(c.budgetBytes / 1024 / 1024).toFixed(0)} MiB`
      : 'no context stats',
  };
}

/** One 16-turn conversation on both hosts from an empty KV, turns alternating which host goes first. */
export async function conversation(
  on: EngineHostClient,
  off: EngineHostClient,
  questions: string[],
): Promise<{ samples: { on: TurnSample[]; off: TurnSample[] }; agree: number }> {
  const histories = { on: [] as ChatMessage[], off: [] as ChatMessage[] };
  const samples = { on: [] as TurnSample[], off: [] as TurnSample[] };
  let agree = 0;
  for (let t = 0; t < TURNS; t++) {
    for (const mode of t % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      const h = histories[mode];
      h.push({ role: 'user', content: questions[t]! });
      const s = await ask(
        mode === 'on' ? on : off,
        [{ role: 'system', content: SYSTEM }, ...h],
        mode === 'on',
      );
      h.push({ role: 'assistant', content: s.text });
      samples[mode].push(s);
    }
    if (samples.on[t]!.text === samples.off[t]!.text) agree++;
  }
  return { samples, agree };
}

/** Per turn, the first round's sample with the median TTFT of all rounds (greedy: every round does the same work). */
export function medianTurns(rounds: TurnSample[][]): TurnSample[] {
  return rounds[0]!.map((first, t) => ({
    ...first,
    ttftMs: summarize(rounds.map((r) => r[t]!.ttftMs)).median,
    prefillMs: summarize(rounds.map((r) => r[t]!.prefillMs)).median,
  }));
}
