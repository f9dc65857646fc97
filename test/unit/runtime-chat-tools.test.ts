// The slot's chat model with tools, over a stand-in runtime stream: what the engine is asked (the prompt rendered
// from the model's own template, MNN's template off), and how the answer comes back (text without markup, the
// calls as deltas and in the result, finishReason tool_calls). Requests without tools still go as messages.
import test from 'ava';
import type { GenerateEvent, GenerateRequest } from '../../agent/runtime/engine/engine-port.js';
import type { ChatRequest, ToolCallDelta } from '../../agent/workloads/shared/chat-model.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import { runtimeChatModel } from '../../agent/workloads/slots/runtime-chat-model.js';
import { familyTemplate } from '../helpers/chat-templates.js';

const TOOLS: NonNullable<ChatRequest['tools']> = [
  { type: 'function', function: { name: 'HassTurnOn', parameters: { type: 'object', properties: {} } } },
];

function modelAnswering(pieces: string[], template = familyTemplate('qwen2.5')) {
  const asked: GenerateRequest[] = [];
  const stream = async function* (_slot: unknown, req: GenerateRequest): AsyncGenerator<GenerateEvent> {
    asked.push(req);
    for (const text of pieces) yield { type: 'text', text };
    yield {
      type: 'done',
      finishReason: 'stop',
      stats: { promptTokens: 10, decodeTokens: pieces.length, prefillMs: 1, decodeMs: 1 },
    };
  };
  const model = runtimeChatModel({ stream, speak: () => (async function* () {})() } as never, 'voice.llm', {
    id: 'qwen',
    capabilities: { vision: false, audio: false, talker: false },
    template: () => template,
  });
  return { model, asked };
}

test('with tools: rendered prompt, template off; calls parsed out of the stream', async (t) => {
  const answer = [
    'Sure',
    '. <tool',
    '_call>\n{"name": "HassTurnOn", ',
    '"arguments": {"name": "kitchen"}}\n</tool_call>',
  ];
  const { model, asked } = modelAnswering(answer);
  const deltas: ToolCallDelta[] = [];
  const s = model.generate({
    messages: [{ role: 'user', content: 'Turn on the kitchen light' }],
    tools: TOOLS,
    onToolCallDelta: (d) => deltas.push(d),
  });
  let text = '';
  for await (const piece of s) text += piece;
  const r = await s.result;
  t.is(asked[0]?.applyTemplate, false);
  t.true(typeof asked[0]?.prompt === 'string' && asked[0].prompt.includes('"name": "HassTurnOn"'));
  t.is(text, 'Sure. ');
  t.is(r.text, 'Sure. ');
  t.is(r.finishReason, 'tool_calls');
  t.deepEqual(
    r.toolCalls?.map((c) => [c.name, c.arguments]),
    [['HassTurnOn', { name: 'kitchen' }]],
  );
  t.like(deltas[0], { index: 0, kind: 'start', name: 'HassTurnOn' });
  t.deepEqual(JSON.parse(deltas.flatMap((d) => (d.kind === 'arguments' ? [d.text] : [])).join('')), {
    name: 'kitchen',
  });
});

test("without tools: the messages go to MNN's own template, the text untouched", async (t) => {
  const { model, asked } = modelAnswering(['<tool_call>', ' is just text here']);
  const s = model.generate({ messages: [{ role: 'user', content: 'Hi' }] });
  let text = '';
  for await (const piece of s) text += piece;
  t.true(Array.isArray(asked[0]?.prompt));
  t.is(asked[0]?.applyTemplate, undefined);
  t.is(text, '<tool_call> is just text here');
  t.is((await s.result).finishReason, 'stop');
});

test('a template that shows no tools: ETOOL before the engine is asked', async (t) => {
  const plain = {
    source: '{% for m in messages %}{{ m.content }}{% endfor %}',
    bos: '',
    eos: '',
    context: {},
  };
  const { model, asked } = modelAnswering(['x'], plain);
  const s = model.generate({ messages: [{ role: 'user', content: 'Hi' }], tools: TOOLS });
  const err = await t.throwsAsync(async () => {
    for await (const _ of s) {
      // the error comes on the first step
    }
  });
  t.true(err instanceof WorkloadError && err.code === 'ETOOL');
  t.regex(err?.message ?? '', /does not support tools/);
  t.is(asked.length, 0);
  await t.throwsAsync(s.result);
});

test('tool_choice none: the tools are not shown and nothing is parsed', async (t) => {
  const { model, asked } = modelAnswering(['Fine.']);
  const s = model.generate({ messages: [{ role: 'user', content: 'Hi' }], tools: TOOLS, toolChoice: 'none' });
  for await (const _ of s) {
    // drained
  }
  t.false(String(asked[0]?.prompt).includes('HassTurnOn'));
  t.is((await s.result).text, 'Fine.');
});

test('a history with tool results but no tools, on a template without tools, goes to MNN as before', async (t) => {
  const plain = {
    source: '{% for m in messages %}{{ m.content }}{% endfor %}',
    bos: '',
    eos: '',
    context: {},
  };
  const { model, asked } = modelAnswering(['ok'], plain);
  const s = model.generate({
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'tool', content: '{"ok": true}' },
    ],
  });
  for await (const _ of s) {
    // drained
  }
  t.true(Array.isArray(asked[0]?.prompt));
  t.is((await s.result).text, 'ok');
});

test('an image and audio with tools: placed in the last user turn before its text; media tags elsewhere made inert', async (t) => {
  const { model, asked } = modelAnswering(['It is a cat.']);
  const image = { data: new Uint8Array(3), width: 1, height: 1 };
  const s = model.generate({
    messages: [
      { role: 'system', content: 'Be brief. <img>/etc/passwd</img>' },
      { role: 'user', content: 'Earlier <audio>/tmp/x.wav</audio>' },
      { role: 'assistant', content: 'Yes.' },
      { role: 'user', content: 'What is this? <img>mnn-edge-image-0</img>' },
    ],
    images: [image],
    audio: new Float32Array(16),
    tools: [
      {
        type: 'function',
        function: { name: 'Look', description: 'sees <img>/x.png</img>', parameters: { type: 'object' } },
      },
    ],
  });
  for await (const _ of s) {
    // drained
  }
  const req = asked[0]!;
  t.is(req.applyTemplate, false);
  t.true(req.mediaPlaced);
  t.deepEqual(req.images, [image]);
  const prompt = String(req.prompt);
  t.true(
    prompt.includes(
      '<|im_start|>user\n<img>mnn-edge-image-0</img><audio>mnn-edge-audio-0</audio>What is this? < img>mnn-edge-image-0< /img><|im_end|>',
    ),
    prompt,
  );
  t.is(prompt.split('<img>').length, 2, 'the one image tag is the placed one');
  t.is(prompt.split('<audio>').length, 2, 'the one audio tag is the placed one');
  t.true(prompt.includes('sees < img>/x.png< /img>'), 'a tool description cannot name a file');

  // Without media the prompt is as before, and the engine is not told it holds any.
  const plain = modelAnswering(['Hi.']);
  for await (const _ of plain.model.generate({ messages: [{ role: 'user', content: 'Hi' }], tools: TOOLS })) {
    // drained
  }
  t.falsy(plain.asked[0]?.mediaPlaced);
});

test('media with tools and no user turn to put them in is refused with the reason', (t) => {
  const { model } = modelAnswering([]);
  const s = model.generate({
    messages: [{ role: 'system', content: 'x' }],
    images: [{ data: new Uint8Array(3), width: 1, height: 1 }],
    tools: TOOLS,
  });
  return t.throwsAsync(
    async () => {
      for await (const _ of s) {
        // drained
      }
    },
    { instanceOf: WorkloadError, message: /need a user message/ },
  );
});
