// How Ollama clients read the board's answers when the model does something the fixtures cannot make it do:
// tool calls (complete in one line, arguments as an object), a failure after the stream started (an NDJSON
// `{"error"}` line the official client raises), an answer cut short by a lost engine host, and keep_alive's
// timers. The routes run on a real server on loopback and the official `ollama` client parses them; only the
// chat model and the slot port are test values.
import test, { type ExecutionContext } from 'ava';
import { Ollama } from 'ollama';
import type { SlotName } from '../../agent/plan/types.js';
import { KeepAliveTimers } from '../../agent/workloads/ollama/keep-alive.js';
import { registerOllamaRoutes } from '../../agent/workloads/ollama/routes.js';
import type { ChatModel, ChatRequest } from '../../agent/workloads/shared/chat-model.js';
import { SlotGate } from '../../agent/workloads/slots/scheduler.js';
import { loopbackRouter } from './loopback-router.js';
import { endingModel } from './scripted-chat-model.js';

async function serve(t: ExecutionContext, model: ChatModel, parks: string[] = []) {
  const { router, logger, listen } = loopbackRouter(t);
  const keepAlive = new KeepAliveTimers({
    park: async (slot, reason) => {
      parks.push(`${slot}: ${reason}`);
      return true;
    },
    nowMs: () => Date.now(),
    onError: () => {},
  });
  t.teardown(() => keepAlive.close());
  registerOllamaRoutes({
    router,
    models: () => [
      {
        id: model.id,
        slot: 'voice.llm' as SlotName,
        version: '1.0.0',
        created: 0,
        open: async () => model,
        gate: new SlotGate('voice.llm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 }),
      },
    ],
    slots: { load: async () => {}, parked: () => false, contextTokens: () => 2048, chat: () => model },
    keepAlive,
    maxImageBytes: 1024,
    decodeImage: () => Promise.reject(new Error('no images here')),
    pulls: () => undefined,
    nowMs: () => Date.now(),
    logger,
  });
  const base = await listen();
  return new Ollama({ host: base });
}

const TOOLS = [
  {
    type: 'function',
    function: { name: 'HassTurnOn', description: 'Turns on', parameters: { type: 'object', properties: {} } },
  },
];
const CALL = { id: 'call_1', name: 'HassTurnOn', arguments: { name: 'kitchen light', brightness: 80 } };
const ask = { model: 'tiny-llm:latest', messages: [{ role: 'user', content: 'Turn on the kitchen light' }] };

test('tools reach the chat model; a call comes whole in one line with its arguments as an object', async (t) => {
  const seen: ChatRequest[] = [];
  const model = endingModel([], { finishReason: 'tool_calls', toolCalls: [CALL] }, seen);
  const client = await serve(t, model);
  const lines = [];
  for await (const part of await client.chat({ ...ask, tools: TOOLS, stream: true })) lines.push(part);
  t.deepEqual(seen[0]?.tools, TOOLS as ChatRequest['tools']);
  const withCalls = lines.filter((l) => l.message.tool_calls !== undefined);
  t.is(withCalls.length, 1);
  t.deepEqual(withCalls[0]!.message.tool_calls, [
    {
      id: 'call_1',
      function: { index: 0, name: 'HassTurnOn', arguments: { name: 'kitchen light', brightness: 80 } },
    },
  ] as never);
  t.false(withCalls[0]!.done);
  t.is(lines.at(-1)!.done_reason, 'stop');

  const whole = await client.chat({ ...ask, tools: TOOLS, stream: false });
  t.deepEqual(whole.message.tool_calls?.[0]?.function.arguments, { name: 'kitchen light', brightness: 80 });
  t.is(whole.done_reason, 'stop');
});

test('a failure after the stream started is the last NDJSON line; the official client raises it', async (t) => {
  const client = await serve(
    t,
    endingModel(['Hello', ' there'], { throwAfter: new Error('the decoder broke') }),
  );
  const got: string[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const part of await client.chat({ ...ask, stream: true })) got.push(part.message.content);
  });
  t.deepEqual(got, ['Hello', ' there']);
  t.is(err?.message, 'the decoder broke');
});

test('an answer cut short by a lost engine host never reads as done: an error line, or a 500 when whole', async (t) => {
  const lost = { finishReason: 'backend-lost' as const, detail: 'engine host pid 42 exited (SIGKILL)' };
  const client = await serve(t, endingModel(['Hel'], lost));
  const err = await t.throwsAsync(async () => {
    for await (const _ of await client.chat({ ...ask, stream: true })) {
      // read to the end
    }
  });
  t.regex(err!.message, /cut short: the engine host serving the model was lost \(engine host pid 42/);
  const whole = (await t.throwsAsync(client.chat({ ...ask, stream: false }))) as Error & {
    status_code: number;
  };
  t.is(whole.status_code, 500);
  t.regex(whole.message, /cut short/);
});

test('keep_alive 0 unloads once the answer is out; a duration sets the expiry /api/ps shows', async (t) => {
  const parks: string[] = [];
  const client = await serve(t, endingModel(['Hi'], {}), parks);
  await client.chat({ ...ask, keep_alive: '10m', stream: false });
  t.deepEqual(parks, []);
  const expires = new Date((await client.ps()).models[0]!.expires_at).getTime() - Date.now();
  t.true(expires > 0 && expires <= 10 * 60_000, `${expires} ms`);
  await client.chat({ ...ask, keep_alive: 0, stream: false });
  t.deepEqual(parks, ['voice.llm: Ollama API: keep_alive 0']);
});

test('keep_alive timers: none runs while a request does; the last one to end starts it', async (t) => {
  const parked: SlotName[] = [];
  const timers = new KeepAliveTimers({
    park: async (slot) => {
      parked.push(slot);
    },
    nowMs: () => 1_000,
    onError: () => {},
  });
  t.teardown(() => timers.close());
  timers.begin('voice.llm', { kind: 'for', ms: 60_000 });
  timers.begin('voice.llm', undefined);
  timers.end('voice.llm');
  t.is(timers.expiresAt('voice.llm'), undefined, 'one request still runs');
  timers.end('voice.llm');
  t.is(timers.expiresAt('voice.llm'), 61_000);
  // A later request without keep_alive keeps the slot's policy; one with -1 keeps the model loaded.
  timers.begin('voice.llm', { kind: 'forever' });
  t.is(timers.expiresAt('voice.llm'), undefined);
  timers.end('voice.llm');
  t.is(timers.expiresAt('voice.llm'), undefined);
  t.deepEqual(parked, []);
  await timers.unloadNow('vision.vlm', 'asked');
  t.deepEqual(parked, ['vision.vlm']);
});
