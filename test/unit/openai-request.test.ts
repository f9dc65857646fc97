import test from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import { decodeDataUrl, parseChatCompletionRequest } from '../../agent/workloads/openai/request.js';
import { SentenceChunker } from '../../agent/workloads/voice/stages.js';

test('a chat request with text and image parts is parsed into messages and images', (t) => {
  const r = parseChatCompletionRequest({
    model: 'tiny-vlm',
    messages: [
      { role: 'developer', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'text', text: 'in the picture?' },
        ],
      },
    ],
    stream: true,
    stream_options: { include_usage: true },
    max_completion_tokens: 40,
    temperature: 0.2,
  });
  t.deepEqual(r.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is\nin the picture?' },
  ]);
  t.deepEqual(r.images, [
    { param: 'messages[1].content[1].image_url.url', url: 'data:image/png;base64,AAAA' },
  ]);
  t.true(r.stream && r.includeUsage);
  t.is(r.maxTokens, 40);
});

test('bad chat requests name the parameter', (t) => {
  const bad: Array<[unknown, string]> = [
    [[], 'The request body must be a JSON object'],
    [{ messages: [{ role: 'user', content: 'x' }] }, 'model is required'],
    [
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role must be one of system, developer, user, assistant, tool',
    ],
    [{ model: 'm', messages: [{ role: 'system', content: 'x' }] }, 'messages must contain a user message'],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] },
      'messages[0].content[0].type "input_audio" is not supported here (expected "text" or "image_url")',
    ],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }, 'n must be 1 on this device'],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream must be a boolean'],
  ];
  for (const [body, message] of bad) t.throws(() => parseChatCompletionRequest(body), { message });
});

test('data URLs: decoded, size-checked before decoding, remote URLs refused', (t) => {
  t.deepEqual([...decodeDataUrl({ param: 'p', url: 'data:image/png;base64,AQID' }, 100)], [1, 2, 3]);
  t.throws(() => decodeDataUrl({ param: 'p', url: 'data:image/png;base64,' + 'A'.repeat(2000) }, 100), {
    message: 'p: the image exceeds 100 bytes (vision.maxFrameBytes)',
  });
  t.throws(() => decodeDataUrl({ param: 'p', url: 'http://camera.local/snap.jpg' }, 100), {
    message: 'p must be a data URL (data:image/...;base64,...); the device does not fetch remote images',
  });
});

test('sentences are cut at punctuation, long runs at a word boundary', (t) => {
  const c = new SentenceChunker(20);
  t.deepEqual(c.push('Hello there. How'), ['Hello there.']);
  t.deepEqual(c.push(' are you? I am'), ['How are you?']);
  t.deepEqual(c.push(' fine and well and good'), ['I am fine and well']);
  t.deepEqual(c.flush(), ['and good']);
});

test('the voice and vision config sections are validated', (t) => {
  t.throws(() => parseConfig({ voice: { duplex: 'both' } }, 'test.json'), {
    message:
      /^Invalid configuration in test\.json: voice\.duplex: expected one of "half", "full", got "both"/,
  });
  t.throws(() => parseConfig({ vision: { watch: { intervalS: -1 } } }, 'test.json'), {
    message: /vision\.watch\.intervalS: expected a number >= 0, got -1/,
  });
  const ok = parseConfig({ voice: { maxNewTokens: 64 }, vision: { camera: '/dev/video0' } }, 'test.json');
  t.deepEqual(ok['voice'], { maxNewTokens: 64 });
  // Models are slots now: the old path keys are refused with their name.
  t.throws(() => parseConfig({ voice: { models: { llm: '/m/config.json' } } }, 'test.json'), {
    message: /voice\.models: is not a known key/,
  });
  t.throws(() => parseConfig({ vision: { model: '/m/config.json' } }, 'test.json'), {
    message: /vision\.model: is not a known key/,
  });
});
