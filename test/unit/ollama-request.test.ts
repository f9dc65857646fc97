// The Ollama API's request parsing: keep_alive durations, model names with tags, chat and generate bodies as
// Home Assistant, Open WebUI and the ollama clients send them, and the errors each bad field gets.
import test from 'ava';
import { ContextCap } from '../../agent/workloads/ollama/context-cap.js';
import { OllamaError, toOllamaError } from '../../agent/workloads/ollama/errors.js';
import { parseKeepAlive } from '../../agent/workloads/ollama/keep-alive-duration.js';
import { findByName, ollamaName } from '../../agent/workloads/ollama/names.js';
import { hubSourceOf } from '../../agent/workloads/ollama/pull.js';
import {
  decodeBase64Image,
  parseChatRequest,
  parseGenerateRequest,
} from '../../agent/workloads/ollama/request.js';
import { WorkloadError } from '../../agent/workloads/shared/errors.js';
import { createMemoryLogger } from '../../lib/log.js';

function refused(t: import('ava').ExecutionContext, fn: () => unknown, message: RegExp, status = 400): void {
  const err = t.throws(fn);
  t.true(err instanceof OllamaError, String(err));
  t.is((err as OllamaError).status, status);
  t.regex(err!.message, message);
}

test('keep_alive: seconds, Go durations, 0 and every negative form', (t) => {
  t.is(parseKeepAlive(undefined), undefined);
  t.is(parseKeepAlive(null), undefined);
  t.deepEqual(parseKeepAlive(0), { kind: 'for', ms: 0 });
  t.deepEqual(parseKeepAlive('0'), { kind: 'for', ms: 0 });
  t.deepEqual(parseKeepAlive('0s'), { kind: 'for', ms: 0 });
  t.deepEqual(parseKeepAlive(300), { kind: 'for', ms: 300_000 });
  t.deepEqual(parseKeepAlive(1.5), { kind: 'for', ms: 1_500 });
  t.deepEqual(parseKeepAlive('300'), { kind: 'for', ms: 300_000 });
  t.deepEqual(parseKeepAlive('5m'), { kind: 'for', ms: 300_000 });
  t.deepEqual(parseKeepAlive('1h30m'), { kind: 'for', ms: 5_400_000 });
  t.deepEqual(parseKeepAlive('1.5h'), { kind: 'for', ms: 5_400_000 });
  t.deepEqual(parseKeepAlive('300ms'), { kind: 'for', ms: 300 });
  t.deepEqual(parseKeepAlive('2m30s'), { kind: 'for', ms: 150_000 });
  for (const forever of [-1, '-1', '-1s', '-5m', -0.5, '720h'])
    t.deepEqual(parseKeepAlive(forever), { kind: 'forever' }, String(forever));
  refused(t, () => parseKeepAlive('soon'), /keep_alive "soon" is not a duration/);
  refused(t, () => parseKeepAlive('5 minutes'), /is not a duration/);
  refused(t, () => parseKeepAlive('m5'), /is not a duration/);
  refused(t, () => parseKeepAlive(true), /keep_alive must be a number of seconds or a duration string/);
  refused(t, () => parseKeepAlive(Number.NaN), /finite number/);
});

test('model names: listed with :latest, found with it, without a tag or with the placed version', (t) => {
  const entries = [
    { id: 'tiny-llm', version: '1.0.0' },
    { id: 'qwen2.5-1.5b', version: '2.0.0' },
  ];
  t.is(ollamaName('tiny-llm'), 'tiny-llm:latest');
  t.is(findByName('tiny-llm:latest', entries)?.id, 'tiny-llm');
  t.is(findByName('tiny-llm', entries)?.id, 'tiny-llm');
  t.is(findByName('tiny-llm:1.0.0', entries)?.id, 'tiny-llm');
  t.is(findByName('qwen2.5-1.5b:latest', entries)?.id, 'qwen2.5-1.5b');
  t.is(findByName('tiny-llm:2.0.0', entries), undefined);
  t.is(findByName('llama3.2', entries), undefined);
});

test('hub sources: hf://, ms:// and Ollama-style hf.co names; anything else is not pullable', (t) => {
  t.is(hubSourceOf('hf://taobao-mnn/Qwen2.5-0.5B-Instruct-MNN'), 'hf://taobao-mnn/Qwen2.5-0.5B-Instruct-MNN');
  t.is(hubSourceOf('ms://MNN/Qwen2.5-0.5B-Instruct-MNN'), 'ms://MNN/Qwen2.5-0.5B-Instruct-MNN');
  t.is(
    hubSourceOf('hf.co/taobao-mnn/Qwen2.5-0.5B-Instruct-MNN'),
    'hf://taobao-mnn/Qwen2.5-0.5B-Instruct-MNN',
  );
  t.is(
    hubSourceOf('hf.co/taobao-mnn/Qwen2.5-0.5B-Instruct-MNN:latest'),
    'hf://taobao-mnn/Qwen2.5-0.5B-Instruct-MNN',
  );
  t.is(hubSourceOf('huggingface.co/a/b:main'), 'hf://a/b@main');
  t.is(hubSourceOf('modelscope.cn/MNN/x'), 'ms://MNN/x');
  t.is(hubSourceOf('llama3.2:latest'), undefined);
  t.is(hubSourceOf('hf.co/only-owner'), undefined);
});

test('a chat body as Home Assistant sends it: tools, a tool result without id or name, options, keep_alive, think', (t) => {
  const r = parseChatRequest({
    model: 'tiny-llm:latest',
    messages: [
      { role: 'system', content: 'You are a voice assistant.' },
      { role: 'user', content: 'Turn on the kitchen light' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ function: { name: 'HassTurnOn', arguments: { name: 'kitchen light' } } }],
      },
      { role: 'tool', content: '{"success": true}' },
    ],
    tools: [
      {
        type: 'function',
        function: {
          name: 'HassTurnOn',
          description: 'Turns on',
          parameters: { type: 'object', properties: {} },
        },
      },
    ],
    stream: true,
    options: { num_ctx: 2048, temperature: 0.7, top_p: 0.9 },
    keep_alive: '-1s',
    think: false,
  });
  t.is(r.model, 'tiny-llm:latest');
  t.true(r.stream);
  t.is(r.numCtx, 2048);
  t.is(r.maxTokens, undefined);
  t.deepEqual(r.keepAlive, { kind: 'forever' });
  t.false(r.loadOnly);
  t.deepEqual(
    r.tools?.map((x) => x.function.name),
    ['HassTurnOn'],
  );
  t.deepEqual(r.messages[2], {
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'call_0', name: 'HassTurnOn', arguments: { name: 'kitchen light' } }],
  });
  t.deepEqual(r.messages[3], { role: 'tool', content: '{"success": true}' });
});

test('chat: stream defaults to true; no messages asks for a load; images, tool names and JSON-text arguments', (t) => {
  t.true(parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).stream);
  t.false(
    parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: false }).stream,
  );
  t.true(parseChatRequest({ model: 'm' }).loadOnly);
  t.true(parseChatRequest({ model: 'm', messages: [] }).loadOnly);
  const r = parseChatRequest({
    model: 'm',
    messages: [
      { role: 'user', content: 'what is this', images: ['aGVsbG8='] },
      { role: 'assistant', tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', content: 'ok', tool_name: 'f' },
    ],
    options: { num_predict: 16 },
  });
  t.deepEqual(r.images, [{ param: 'messages[0].images[0]', base64: 'aGVsbG8=' }]);
  t.deepEqual(r.messages[1]?.toolCalls?.[0]?.arguments, { a: 1 });
  t.is(r.messages[2]?.toolName, 'f');
  t.is(r.maxTokens, 16);
  t.is(
    parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], options: { num_predict: -1 } })
      .maxTokens,
    undefined,
  );
});

test('chat: each bad field gets a 400 that names it', (t) => {
  const user = [{ role: 'user', content: 'hi' }];
  refused(t, () => parseChatRequest('nope'), /body must be a JSON object/);
  refused(t, () => parseChatRequest({ messages: user }), /model is required/);
  refused(t, () => parseChatRequest({ model: 'm', messages: 'hi' }), /messages must be an array/);
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: [{ role: 'bot', content: 'x' }] }),
    /messages\[0\]\.role/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: [{ role: 'system', content: 'x' }] }),
    /must contain a user message/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 3 }] }),
    /messages\[0\]\.content must be a string/,
  );
  refused(
    t,
    () =>
      parseChatRequest({
        model: 'm',
        messages: [{ role: 'system', content: 'x', images: ['aGk='] }, ...user],
      }),
    /messages\[0\]: images are accepted in user messages only/,
  );
  refused(
    t,
    () =>
      parseChatRequest({
        model: 'm',
        messages: [{ role: 'user', content: 'x', tool_calls: [{ function: { name: 'f' } }] }],
      }),
    /only assistant messages carry calls/,
  );
  refused(
    t,
    () =>
      parseChatRequest({
        model: 'm',
        messages: [
          ...user,
          { role: 'assistant', tool_calls: [{ function: { name: 'f', arguments: '[1]' } }] },
        ],
      }),
    /messages\[1\]\.tool_calls\[0\]\.function\.arguments must be a JSON object/,
  );
  refused(t, () => parseChatRequest({ model: 'm', messages: user, tools: {} }), /tools must be an array/);
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, tools: [{ type: 'code' }] }),
    /tools\[0\]\.type "code" is not supported/,
  );
  refused(
    t,
    () =>
      parseChatRequest({
        model: 'm',
        messages: user,
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'function', function: { name: 'f' } },
        ],
      }),
    /tools\[1\]\.function\.name "f" is listed twice/,
  );
  refused(
    t,
    () =>
      parseChatRequest({
        model: 'm',
        messages: user,
        tools: [{ type: 'function', function: { name: 'f', parameters: [] } }],
      }),
    /tools\[0\]\.function\.parameters must be a JSON Schema object/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, stream: 'yes' }),
    /stream must be a boolean/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, options: { num_ctx: -1 } }),
    /options\.num_ctx must not be negative \(got -1\)/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, options: { num_ctx: '8k' } }),
    /options\.num_ctx must be a number of tokens, not "8k"/,
  );
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, options: 'fast' }),
    /options must be an object/,
  );
  refused(t, () => parseChatRequest({ model: 'm', messages: user, think: 'very' }), /think must be/);
  refused(
    t,
    () => parseChatRequest({ model: 'm', messages: user, format: { type: 'object' } }),
    /format \(structured output\) is not supported/,
  );
  // think's levels and an empty format are accepted.
  t.notThrows(() => parseChatRequest({ model: 'm', messages: user, think: 'high', format: '' }));
});

test('generate: prompt and system become messages; an empty prompt asks for a load; what would change the shape is refused', (t) => {
  const r = parseGenerateRequest({
    model: 'm',
    prompt: 'Hello',
    system: 'Be brief',
    images: ['aGk='],
    keep_alive: '5m',
  });
  t.deepEqual(r.messages, [
    { role: 'system', content: 'Be brief' },
    { role: 'user', content: 'Hello' },
  ]);
  t.deepEqual(r.images, [{ param: 'images[0]', base64: 'aGk=' }]);
  t.deepEqual(r.keepAlive, { kind: 'for', ms: 300_000 });
  t.true(parseGenerateRequest({ model: 'm', keep_alive: 0 }).loadOnly);
  t.true(parseGenerateRequest({ model: 'm', prompt: '' }).loadOnly);
  refused(
    t,
    () => parseGenerateRequest({ model: 'm', prompt: 'x', raw: true }),
    /raw prompts are not supported/,
  );
  refused(t, () => parseGenerateRequest({ model: 'm', prompt: 'x', suffix: 'y' }), /suffix is not supported/);
  refused(
    t,
    () => parseGenerateRequest({ model: 'm', prompt: 'x', template: '{{ .Prompt }}' }),
    /template is not supported/,
  );
  refused(
    t,
    () => parseGenerateRequest({ model: 'm', prompt: 'x', context: [1, 2] }),
    /context .* is not supported/,
  );
  refused(t, () => parseGenerateRequest({ model: 'm', prompt: 3 }), /prompt must be a string/);
  refused(
    t,
    () => parseGenerateRequest({ model: 'm', prompt: 'x', images: 'aGk=' }),
    /images must be an array/,
  );
});

test('base64 images: a data URL prefix is accepted; not base64, empty or too large are refused before decoding', (t) => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  t.deepEqual(decodeBase64Image({ param: 'images[0]', base64: png.toString('base64') }, 1024), png);
  t.deepEqual(
    decodeBase64Image(
      { param: 'images[0]', base64: `data:image/png;base64,${png.toString('base64')}` },
      1024,
    ),
    png,
  );
  refused(
    t,
    () => decodeBase64Image({ param: 'images[0]', base64: '%%%' }, 1024),
    /images\[0\] is not base64/,
  );
  refused(
    t,
    () => decodeBase64Image({ param: 'images[0]', base64: '====' }, 1024),
    /images\[0\] holds no data/,
  );
  refused(
    t,
    () => decodeBase64Image({ param: 'images[0]', base64: Buffer.alloc(2048).toString('base64') }, 1024),
    /exceeds 1024 bytes \(vision\.maxFrameBytes\)/,
  );
});

test('num_ctx as Ollama reads it: any size (capped later), a fraction cut, 0 as none; capped once per model and value', (t) => {
  const ctx = (num_ctx: unknown) =>
    parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], options: { num_ctx } })
      .numCtx;
  t.is(ctx(8192), 8192);
  t.is(ctx(2048.9), 2048);
  t.is(ctx(0), undefined);
  t.is(ctx(null), undefined);

  const log = createMemoryLogger();
  const caps = new ContextCap(log);
  const model = { id: 'qwen', slot: 'voice.llm' };
  t.deepEqual(caps.fit(1024, 2048, model), { numCtx: 1024 });
  t.deepEqual(caps.fit(8192, undefined, model), { numCtx: 8192 }, 'a slot without a known context keeps it');
  t.deepEqual(caps.fit(undefined, 2048, model), { numCtx: undefined });
  const capped = caps.fit(8192, 2048, model);
  t.is(capped.numCtx, 2048);
  t.regex(
    capped.warning ?? '',
    /num_ctx 8192 is more than the 2048-token context qwen .*slots\.voice\.llm\.contextTokens.*capped to 2048/,
  );
  caps.fit(8192, 2048, model);
  caps.fit(4096, 2048, model);
  caps.fit(8192, 2048, { id: 'other', slot: 'voice.llm' });
  const warned = log.lines.filter((l) => l.includes('requested context size too large'));
  t.is(warned.length, 3, 'once per model and value');
});

test("failures map to Ollama's status codes", (t) => {
  const busy = toOllamaError(new WorkloadError('EBUSY', 'The voice.llm model is busy', { retryAfterS: 3 }));
  t.is(busy.status, 429);
  t.deepEqual(busy.headers, { 'Retry-After': '3' });
  t.is(toOllamaError(new WorkloadError('ENOENGINE', 'no MNN')).status, 503);
  t.is(toOllamaError(new WorkloadError('EFRAME', 'bad image')).status, 400);
  t.is(toOllamaError(Object.assign(new Error('bad'), { code: 'EINVAL' })).status, 400);
  const crash = toOllamaError(new Error('host died'));
  t.is(crash.status, 500);
  t.is(crash.message, 'The model failed: host died');
});
