import test from 'ava';
import {
  RuntimeChatModel,
  type SlotGenerateRequest,
  type SlotGenerator,
} from '../../agent/workloads/runtime-chat-model.js';

// A stand-in for the runtime's stream(): records the request, yields two pieces and the stats.
class FakeRuntime implements SlotGenerator {
  readonly requests: Array<{ slot: string; request: SlotGenerateRequest }> = [];
  async *stream(slot: 'vision.vlm' | string, request: SlotGenerateRequest) {
    this.requests.push({ slot, request });
    yield { type: 'text' as const, text: 'a ' };
    yield { type: 'text' as const, text: 'cat' };
    yield { type: 'done' as const, stats: { promptTokens: 27, decodeTokens: 2, prefillMs: 5, decodeMs: 4 } };
  }
}

test('a runtime slot serves the ChatModel port: messages and media pass through, stats come back', async (t) => {
  const runtime = new FakeRuntime();
  const model = new RuntimeChatModel('vision.vlm', runtime, { vision: true, audio: false, talker: false });
  const frame = { data: new Uint8Array(12), width: 2, height: 2 };
  const stream = model.generate({
    messages: [{ role: 'user', content: 'What?' }],
    images: [frame],
    maxNewTokens: 2,
  });
  const pieces: string[] = [];
  for await (const p of stream) pieces.push(p);
  t.deepEqual(pieces, ['a ', 'cat']);
  t.deepEqual(await stream.result, {
    text: 'a cat',
    finishReason: 'length',
    promptTokens: 27,
    generatedTokens: 2,
    prefillMs: 5,
    decodeMs: 4,
  });
  t.deepEqual(runtime.requests, [
    {
      slot: 'vision.vlm',
      request: { prompt: [{ role: 'user', content: 'What?' }], maxNewTokens: 2, images: [frame] },
    },
  ]);
});

test('breaking off a runtime stream settles the result as aborted', async (t) => {
  const model = new RuntimeChatModel('voice.llm', new FakeRuntime(), {
    vision: false,
    audio: false,
    talker: false,
  });
  const stream = model.generate({ messages: [{ role: 'user', content: 'Hi' }] });
  for await (const _ of stream) break;
  const r = await stream.result;
  t.is(r.finishReason, 'aborted');
  t.is(r.text, 'a ');
});
