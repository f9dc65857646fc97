// The dashboard's typed chat and the timers' API on a real loopback server (the agent's router and HTTP server);
// only the chat model is a scripted double. The NDJSON lines are the contract the dashboard's chat page reads.
import test, { type ExecutionContext } from 'ava';
import { toolsDefaults } from '../../agent/config/sections/tools.js';
import { HttpRouter } from '../../agent/http/router.js';
import { createHttpServer } from '../../agent/http/server.js';
import { openStore } from '../../agent/store/database.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import { ActingAssistant } from '../../agent/workloads/tools/assistant.js';
import { BuiltinTools } from '../../agent/workloads/tools/builtin.js';
import { registerAssistantRoutes } from '../../agent/workloads/tools/routes.js';
import { TimerService } from '../../agent/workloads/tools/timers.js';
import { createMemoryLogger } from '../../lib/log.js';
import { type Script, ScriptedChatModel } from './scripted-chat-model.js';

async function serve(t: ExecutionContext, script: Script | undefined, options: { vision?: boolean } = {}) {
  const logger = createMemoryLogger();
  const router = new HttpRouter();
  const db = openStore(':memory:');
  const timers = new TimerService(db, { now: Date.now, maxTimers: () => 5 });
  const builtin = new BuiltinTools({ settings: () => toolsDefaults, now: Date.now, timers });
  const assistant = new ActingAssistant({
    sources: () => [builtin],
    settings: () => ({ enabled: true, allowRemoteActs: false, limits: toolsDefaults.limits }),
  });
  const model = script ? new ScriptedChatModel(script) : undefined;
  if (model && options.vision === false) (model.capabilities as { vision: boolean }).vision = false;
  registerAssistantRoutes({
    router,
    assistant,
    timers,
    target: (vision) => {
      if (!model) throw new WorkloadError('ENOMODEL', 'slot voice.llm: no model is placed');
      if (vision && !model.capabilities.vision) throw new WorkloadError('ENOMODEL', 'no model sees images');
      return { model, acquire: async () => () => {} };
    },
    systemPrompt: () => 'Be brief.',
    maxNewTokens: () => 64,
    maxImageBytes: 1 << 20,
    decodeImage: async () => ({ width: 2, height: 2, data: new Uint8Array(12) }),
    logger,
  });
  const server = createHttpServer({
    bind: '127.0.0.1',
    port: 0,
    maxUploadBytes: 1 << 20,
    maxWsMessageBytes: 1 << 16,
    router,
    authenticator: { authenticate: () => ({ method: 'bearer' }), tokenMatches: () => true },
    logger,
  });
  await server.listen();
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${server.port}`;
  const post = (body: unknown) =>
    fetch(`${base}/api/assistant/chat`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  return { base, post, model, timers };
}

const lines = async (r: Response) =>
  (await r.text())
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test('a typed chat with a tool round streams text, the call, its result and done as NDJSON', async (t) => {
  const { post, model, timers } = await serve(t, [
    {
      pieces: ['Setting it.'],
      toolCalls: [{ id: 'c1', name: 'set_timer', arguments: { minutes: 5, label: 'tea' } }],
    },
    { pieces: ['Your tea timer is set.'] },
  ]);
  const r = await post({
    messages: [{ role: 'user', content: 'tea timer 5 minutes' }],
    conversationId: 'tab-1',
  });
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /application\/x-ndjson/);
  const out = await lines(r);
  t.deepEqual(
    out.map((l) => l['type']),
    ['text', 'tool_call', 'tool_result', 'text', 'text', 'done'],
  );
  t.deepEqual(out[1], {
    type: 'tool_call',
    id: 'c1',
    name: 'set_timer',
    arguments: { minutes: 5, label: 'tea' },
  });
  t.like(out[2], { type: 'tool_result', id: 'c1', ok: true });
  t.regex(String(out[2]!['content']), /Timer "tea" .* set for 5 minutes/);
  t.is(typeof out[2]!['ms'], 'number');
  t.deepEqual(Object.keys(out[2]!).sort(), ['content', 'id', 'ms', 'ok', 'type']);
  t.like(out.at(-1), { type: 'done', finishReason: 'stop', usage: { promptTokens: 20 } });
  t.is(timers.running()[0]?.label, 'tea');
  // The system prompt went in front; the tools were offered.
  t.like(model!.requests[0]!.messages[0], { role: 'system', content: 'Be brief.' });
  t.true(model!.requests[0]!.tools!.some((s) => s.function.name === 'set_timer'));
});

test('the timers API lists timers with their events and cancels by id', async (t) => {
  const { base, timers } = await serve(t, undefined);
  const tm = timers.set({ durationMs: 60_000, label: 'eggs', setBy: 'local' });
  const listed = (await (await fetch(`${base}/api/assistant/timers`)).json()) as {
    timers: Array<{ id: string; state: string }>;
    events: Array<{ type: string; id: string }>;
  };
  t.like(listed.timers[0], { id: tm.id, state: 'running' });
  t.like(listed.events[0], { type: 'set', id: tm.id });
  const del = await fetch(`${base}/api/assistant/timers/${tm.id}`, { method: 'DELETE' });
  t.is(del.status, 200);
  t.like(((await del.json()) as { timer: unknown }).timer, { id: tm.id, state: 'cancelled' });
  const again = await fetch(`${base}/api/assistant/timers/${tm.id}`, { method: 'DELETE' });
  t.is(again.status, 404);
});

test('bad requests are refused before the stream, naming the field; no model is a 503 with the reason', async (t) => {
  const { post } = await serve(t, [{ pieces: ['hi'] }], { vision: false });
  const cases: Array<[unknown, RegExp]> = [
    [{}, /messages must be a non-empty array/],
    [{ messages: [{ role: 'robot', content: 'x' }] }, /messages\[0\]\.role/],
    [{ messages: [{ role: 'user', content: 1 }] }, /messages\[0\]\.content must be a string/],
    [{ messages: [{ role: 'assistant', content: 'x' }] }, /last of messages must be the user's/],
    [{ messages: [{ role: 'user', content: 'x' }], extra: 1 }, /Unknown field "extra"/],
    [
      { messages: [{ role: 'user', content: 'x' }], images: ['http://x/y.png'] },
      /images\[0\] must be a data URL/,
    ],
    [{ messages: [{ role: 'user', content: 'x' }], conversationId: '' }, /conversationId/],
  ];
  for (const [body, message] of cases) {
    const r = await post(body);
    t.is(r.status, 400, JSON.stringify(body));
    t.regex(((await r.json()) as { error: { message: string } }).error.message, message);
  }
  const img = await post({
    messages: [{ role: 'user', content: 'what is this' }],
    images: ['data:image/png;base64,AAAA'],
  });
  t.is(img.status, 503);
  t.regex(((await img.json()) as { error: { message: string } }).error.message, /no model sees images/);
  const none = await serve(t, undefined);
  const r = await none.post({ messages: [{ role: 'user', content: 'hi' }] });
  t.is(r.status, 503);
  t.regex(JSON.stringify(await r.json()), /no model is placed/);
});

test('an image goes to the model with the request, and the tools with it', async (t) => {
  const { post, model } = await serve(t, [{ pieces: ['A grey square.'] }]);
  const r = await post({
    messages: [{ role: 'user', content: 'what is this' }],
    images: ['data:image/png;base64,AAAA'],
  });
  const out = await lines(r);
  t.like(out.at(-1), { type: 'done', finishReason: 'stop' });
  t.is(model!.requests[0]!.images?.length, 1);
  t.true((model!.requests[0]!.tools?.length ?? 0) > 0, 'a turn with an image is offered the tools');
});
