// An answer cut short by a lost engine host, as an OpenAI client reads it (streamed and whole): finish_reason
// "error" with native_finish_reason "backend-lost" and the reason, never a plain "stop". The routes run on a
// real server on loopback and the official `openai` client parses them; only the chat model is a test value.
import test, { type ExecutionContext } from 'ava';
import OpenAI from 'openai';
import { openAiFinish } from '../../agent/workloads/openai/finish.js';
import { registerOpenAiRoutes } from '../../agent/workloads/openai/routes.js';
import type { ChatModel, ChatResult } from '../../agent/workloads/shared/chat-model.js';
import { SlotGate } from '../../agent/workloads/slots/scheduler.js';
import { loopbackRouter } from './loopback-router.js';
import { endingModel } from './scripted-chat-model.js';

const LOST =
  'request failed: engine host pid 4242 for tiny-llm@1.0.0/fp32|vulkan exited unexpectedly (signal SIGKILL)';

/** A model that streams two pieces and then ends as the runtime reports it (a lost host, a length cut). */
const cutShortModel = (ending: Pick<ChatResult, 'finishReason' | 'detail'>): ChatModel =>
  endingModel(['Hello', ' wor'], ending);

async function serve(t: ExecutionContext, model: ChatModel): Promise<OpenAI> {
  const { router, logger, listen } = loopbackRouter(t);
  registerOpenAiRoutes({
    router,
    models: () => [
      {
        id: model.id,
        created: 0,
        open: async () => model,
        gate: new SlotGate('voice.llm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 }),
      },
    ],
    maxImageBytes: 1024,
    decodeImage: () => Promise.reject(new Error('no images here')),
    nowMs: () => Date.now(),
    logger,
  });
  const base = await listen();
  return new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x', maxRetries: 0 });
}

const ask = { model: 'tiny-llm', messages: [{ role: 'user' as const, content: 'Hi' }] };

test('non-streamed: the partial text with finish_reason "error", native_finish_reason and the reason', async (t) => {
  const client = await serve(t, cutShortModel({ finishReason: 'backend-lost', detail: LOST }));
  const r = await client.chat.completions.create(ask);
  const choice = r.choices[0]! as (typeof r.choices)[0] & Record<string, unknown>;
  t.is(choice.message.content, 'Hello wor');
  t.is(choice.finish_reason as string, 'error');
  t.is(choice['native_finish_reason'], 'backend-lost');
  t.deepEqual(choice['error'], {
    message: `The answer was cut short: the engine host serving the model was lost (${LOST}); the text so far is all there is, and the next request is served by the fallback`,
    type: 'server_error',
    code: 'backend_lost',
  });
  t.is(r.usage?.completion_tokens, 2);
});

test('streamed: content chunks, then one finish chunk with "error" and the reason; the client reads to [DONE]', async (t) => {
  const client = await serve(t, cutShortModel({ finishReason: 'backend-lost', detail: LOST }));
  const stream = await client.chat.completions.create({ ...ask, stream: true });
  let text = '';
  const finishes: Array<Record<string, unknown>> = [];
  for await (const c of stream) {
    const choice = c.choices[0]! as (typeof c.choices)[0] & Record<string, unknown>;
    text += choice.delta.content ?? '';
    if (choice.finish_reason !== null) finishes.push(choice);
  }
  t.is(text, 'Hello wor');
  t.is(finishes.length, 1);
  t.is(finishes[0]!['finish_reason'], 'error');
  t.is(finishes[0]!['native_finish_reason'], 'backend-lost');
  t.is((finishes[0]!['error'] as { code: string }).code, 'backend_lost');
});

test('answers that ended normally keep OpenAI values and carry no extra fields', async (t) => {
  t.deepEqual(openAiFinish({ finishReason: 'stop' }), { finish_reason: 'stop' });
  t.deepEqual(openAiFinish({ finishReason: 'length' }), { finish_reason: 'length' });
  t.deepEqual(openAiFinish({ finishReason: 'aborted' }), { finish_reason: 'stop' });
  const client = await serve(t, cutShortModel({ finishReason: 'length' }));
  const r = await client.chat.completions.create(ask);
  t.is(r.choices[0]!.finish_reason, 'length');
  t.false('native_finish_reason' in r.choices[0]!);
  t.false('error' in r.choices[0]!);
});
