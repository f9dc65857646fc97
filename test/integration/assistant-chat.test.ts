// The dashboard's typed chat on a real agent with only an LLM placed (no ASR, no TTS): the fixture model runs in
// an engine host, its answer comes back as NDJSON lines ending in `done`; the timers' API and the auth of both.
// The tool round itself on a real model belongs to the tool-call fixture model's e2e test (issue 42); here the
// model answers in words.
import test from 'ava';
import type { AgentConfig } from '../../agent/config/schema.js';
import { loopbackAgentConfig } from '../helpers/agent-config.js';
import { startWorkloadsAgent } from '../helpers/workloads-agent.js';

test('typed chat with only an LLM placed streams NDJSON to done; timers are listed; both need the token', async (t) => {
  const { dataDir, config: base } = loopbackAgentConfig('mnn-edge-chat-');
  const config: AgentConfig = {
    ...base,
    slots: { 'voice.llm': { model: 'tiny-llm' } },
    voice: { maxNewTokens: 8, tools: { limits: { maxRounds: 2 } } },
  };
  const { port, token, workloads } = await startWorkloadsAgent(t, { dataDir, config, models: ['tiny-llm'] });
  const url = `http://127.0.0.1:${port}`;
  const auth = { Authorization: `Bearer ${token}` };
  const body = JSON.stringify({
    messages: [{ role: 'user', content: 'Hello there' }],
    conversationId: 'it-1',
  });

  const refused = await fetch(`${url}/api/assistant/chat`, { method: 'POST', body });
  t.is(refused.status, 401);
  t.is((await fetch(`${url}/api/assistant/timers`)).status, 401);

  const r = await fetch(`${url}/api/assistant/chat`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body,
  });
  t.is(r.status, 200);
  const lines = (await r.text())
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const done = lines.at(-1)!;
  t.is(done['type'], 'done', JSON.stringify(lines));
  t.true(['stop', 'length'].includes(String(done['finishReason'])));
  t.true((done['usage'] as { generatedTokens: number }).generatedTokens > 0);
  t.true(lines.slice(0, -1).every((l) => ['text', 'tool_call', 'tool_result'].includes(String(l['type']))));

  const timers = await fetch(`${url}/api/assistant/timers`, { headers: auth });
  t.is(timers.status, 200);
  t.deepEqual(await timers.json(), { timers: [], events: [] });
  // The tools a turn sees on this board: the time and the timers (no camera, no board loop to announce on).
  const catalog = await workloads.assistant()!.assistant.catalog();
  t.deepEqual([...catalog.entries.keys()], ['get_time', 'set_timer', 'list_timers', 'cancel_timer']);
});
