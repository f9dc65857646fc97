// bench/ollama-path: what the Ollama-compatible API adds to a chat request, against the same request over the
// OpenAI-compatible API in the same run, on one agent (tiny-llm on voice.llm). Both are streamed (NDJSON vs SSE)
// over the same HTTP stack with the same messages and token limit; rounds alternate the paths so that load on a
// shared machine falls on both. Figures: time to the first text piece and to the end of the answer, each path's
// median, and the ratio Ollama / OpenAI of the whole request. Target (issue 42): ≤ 1.05×.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentConfig } from '../agent/config/schema.js';
import { createAgent } from '../agent/main.js';
import { createWorkloadsModule } from '../agent/workloads/module.js';
import { engineAvailability, unavailableMessage } from '../engine/index.js';
import { createMemoryLogger } from '../lib/log.js';
import { slotRuntimeModules } from '../test/engine/_slots.js';
import { loopbackAgentConfig } from '../test/helpers/agent-config.js';
import { check, describe, fmt, loadLine, summarize } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 20);
const MAX_TOKENS = 16;
const TARGET_RATIO = 1.05;

const availability = engineAvailability();
if (!availability.available) {
  console.log(`SKIP Ollama vs OpenAI path: ${unavailableMessage(availability.reason)}`);
  process.exit(0);
}

const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-bench-ollama-');
const config: AgentConfig = { ...base, slots: { 'voice.llm': { model: 'tiny-llm' } } };
const slots = slotRuntimeModules(['tiny-llm']);
const agent = createAgent(config, {
  logger: createMemoryLogger(),
  modules: [...slots.modules, createWorkloadsModule({ runtime: slots.runtime })],
});
await agent.start();
await slots.settled();
const token = readFileSync(join(dataDir, 'pairing-token'), 'utf8').trim();
const host = `http://127.0.0.1:${agent.http.port}`;
const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
const messages = [{ role: 'user', content: 'Hello' }];

/** One streamed request: ms to the first text piece and to the end of the body. */
async function timed(path: string, body: unknown, hasText: (line: string) => boolean) {
  const t0 = performance.now();
  const res = await fetch(`${host}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let first = Number.NaN;
  let buffer = '';
  const reader = res.body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    buffer += decoder.decode(r.value, { stream: true });
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    if (Number.isNaN(first) && lines.some(hasText)) first = performance.now() - t0;
  }
  return { firstMs: first, totalMs: performance.now() - t0 };
}

const openai = () =>
  timed(
    '/v1/chat/completions',
    { model: 'tiny-llm', messages, stream: true, max_tokens: MAX_TOKENS },
    (l) => l.startsWith('data: {') && /"content":"[^"]/.test(l),
  );
const ollama = () =>
  timed(
    '/api/chat',
    { model: 'tiny-llm:latest', messages, stream: true, options: { num_predict: MAX_TOKENS } },
    (l) => /"content":"[^"]/.test(l),
  );

try {
  // Warm both paths (and the conversation cache) before measuring.
  await openai();
  await ollama();
  const a: Array<{ firstMs: number; totalMs: number }> = [];
  const b: Array<{ firstMs: number; totalMs: number }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      a.push(await openai());
      b.push(await ollama());
    } else {
      b.push(await ollama());
      a.push(await openai());
    }
  }
  const first = [summarize(a.map((r) => r.firstMs)), summarize(b.map((r) => r.firstMs))];
  const total = [summarize(a.map((r) => r.totalMs)), summarize(b.map((r) => r.totalMs))];
  console.log(`tiny-llm, ${MAX_TOKENS} tokens, ${ROUNDS} rounds each, alternating; ${loadLine()}`);
  console.log(`  first piece  OpenAI ${describe(first[0]!, 'ms')}   Ollama ${describe(first[1]!, 'ms')}`);
  console.log(`  whole answer OpenAI ${describe(total[0]!, 'ms')}   Ollama ${describe(total[1]!, 'ms')}`);
  const ratio = total[1]!.median / total[0]!.median;
  check(
    'Ollama path / OpenAI path, whole streamed answer (median)',
    Number(fmt(ratio, 3)),
    '×',
    `≤ ${TARGET_RATIO}`,
    ratio <= TARGET_RATIO,
  );
} finally {
  await agent.stop('bench done');
  rmSync(dataDir, { recursive: true, force: true });
}
