// The engine runs tiny-llm inside the guest: a chat completion through the agent's OpenAI API, asked from the
// host with the official client. Greedy decoding of the fixture is deterministic, and MNN's own llm_demo gave the
// same text on x86 and on this arm64 build at every precision (shared/fixtures/README.md, the arm64 tier's
// references), so the guest's answer must be that text exactly, with the recorded token counts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { modelFixturesDir } from '../../test/helpers/paths.js';
import type { AgentApi, Checks } from './tier.js';

interface ExpectedCase {
  model: string;
  prompt: string;
  image: string | null;
  text: string;
  promptTokens: number;
  decodeTokens: number;
}

export function expectedTinyLlm(): ExpectedCase {
  const file = JSON.parse(readFileSync(join(modelFixturesDir, 'expected-outputs.json'), 'utf8')) as {
    cases: ExpectedCase[];
  };
  const c = file.cases.find((x) => x.model === 'tiny-llm' && x.prompt === 'Hello' && x.image === null);
  if (c === undefined) throw new Error('expected-outputs.json has no tiny-llm "Hello" case');
  return c;
}

export async function llmAnswers(agent: AgentApi, checks: Checks, when: string): Promise<void> {
  const expected = expectedTinyLlm();
  const client = new OpenAI({
    baseURL: `http://127.0.0.1:${agent.port}/v1`,
    apiKey: agent.token,
    maxRetries: 0,
    // Emulated arm64 on a shared machine: a budget for the answer, not a speed requirement.
    timeout: 10 * 60_000,
  });
  const started = Date.now();
  const answer = await client.chat.completions.create({
    model: 'tiny-llm',
    messages: [{ role: 'user', content: expected.prompt }],
  });
  const text = answer.choices[0]?.message.content ?? '';
  const usage = answer.usage;
  const same = text === expected.text;
  const differsAt = [...text].findIndex((ch, i) => ch !== [...expected.text][i]);
  checks.check(
    `tiny-llm answers in the guest ${when}: llm_demo's greedy text`,
    same &&
      usage?.prompt_tokens === expected.promptTokens &&
      usage?.completion_tokens === expected.decodeTokens,
    `${JSON.stringify(text.slice(0, 40))}… ${usage?.prompt_tokens}+${usage?.completion_tokens} tokens${same ? '' : `; differs from ${JSON.stringify(expected.text)} at character ${differsAt}`}`,
    started,
  );
}
