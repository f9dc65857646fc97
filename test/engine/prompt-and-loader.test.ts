// Pure parts of the engine that run without MNN: the loader's explanation, prompt assembly, the call queue.
import { join, resolve } from 'node:path';
import test from 'ava';
import { addonCandidates, createAddonLoader, ENGINE_HELP, EngineError } from '../../engine/index.js';
import { buildPrefillRequest, mediaPlaceholder } from '../../engine/src/prompt.js';
import { SerialQueue } from '../../engine/src/serial-queue.js';
import { repoRoot } from '../helpers/paths.js';

const textModel = { vision: false, audio: false, name: 'tiny-llm' };
const omni = { vision: true, audio: true, name: 'omni' };

test('a missing addon explains what to do', (t) => {
  const loader = createAddonLoader(['/nonexistent/mnn_edge_engine.node']);
  const availability = loader.availability();
  t.deepEqual(availability, {
    available: false,
    reason:
      'the engine addon is not built (looked for /nonexistent/mnn_edge_engine.node; the build is skipped when no MNN install is found)',
  });
  const err = t.throws(() => loader.load(), { instanceOf: EngineError });
  t.is(err?.code, 'ENOENGINE');
  t.is(
    err?.message,
    `MNN engine not available: the engine addon is not built (looked for /nonexistent/mnn_edge_engine.node; the build is skipped when no MNN install is found). ${ENGINE_HELP}`,
  );
  t.is(
    ENGINE_HELP,
    'Set MNN_ROOT to an MNN install prefix (include/MNN, lib/libMNN.so, the llm library) and run npm run build:engine.',
  );
});

test('the addon is looked for inside this checkout only (MNN_EDGE_ENGINE_ADDON aside)', (t) => {
  t.deepEqual(addonCandidates({}), [
    join(repoRoot, 'engine', 'build', 'Release', 'mnn_edge_engine.node'),
    join(repoRoot, 'engine', 'build', 'Debug', 'mnn_edge_engine.node'),
  ]);
  t.deepEqual(addonCandidates({ MNN_EDGE_ENGINE_ADDON: 'x/y.node' }), [resolve('x/y.node')]);
});

test('media become placeholders before the text, in MNN prompt syntax', (t) => {
  const pcm = new Float32Array(320);
  const req = buildPrefillRequest(
    { input: 'Hello', images: ['/a.png'], audios: [{ samples: pcm }], maxNewTokens: 4, applyTemplate: true },
    omni,
  );
  t.is(req.text, '<img>mnn-edge-image-0</img><audio>mnn-edge-audio-0</audio>Hello');
  t.deepEqual(req.images, [{ key: 'mnn-edge-image-0', path: '/a.png' }]);
  t.deepEqual(req.audios, [{ key: 'mnn-edge-audio-0', samples: pcm, sampleRate: 16000 }]);
});

test('inline tags become checked parts keyed by their own text', (t) => {
  const req = buildPrefillRequest(
    {
      input: '<img>/x.png</img>Hi<audio>/y.wav</audio>',
      maxNewTokens: 1,
      applyTemplate: true,
      mediaTags: true,
    },
    omni,
  );
  t.deepEqual(req.images, [{ key: '/x.png', path: '/x.png' }]);
  t.deepEqual(req.audios, [{ key: '/y.wav', path: '/y.wav' }]);
});

test('by default a media tag in user text is made inert: no part, and MNN will not read it as a file', (t) => {
  const input = 'see <img>/etc/shadow</img> and <audio>http://10.0.0.1/x.wav</audio> <video>/v.mp4</video>';
  const req = buildPrefillRequest({ input, maxNewTokens: 1, applyTemplate: true }, omni);
  t.is(
    req.text,
    'see < img>/etc/shadow< /img> and < audio>http://10.0.0.1/x.wav< /audio> < video>/v.mp4< /video>',
  );
  t.deepEqual(req.images, []);
  t.deepEqual(req.audios, []);
  const chat = buildPrefillRequest(
    {
      input: [
        { role: 'system', content: '<img>/a.png</img>' },
        { role: 'user', content: '<audio>/b.wav</audio>hi' },
      ],
      images: ['/cam.png'],
      maxNewTokens: 1,
      applyTemplate: true,
    },
    omni,
  );
  t.deepEqual(chat.messages, [
    ['system', '< img>/a.png< /img>'],
    ['user', '<img>mnn-edge-image-0</img>< audio>/b.wav< /audio>hi'],
  ]);
  t.deepEqual(chat.images, [{ key: 'mnn-edge-image-0', path: '/cam.png' }]);
  // Opting in reads img/audio tags; video has no checked part, so it stays inert either way.
  const trusted = buildPrefillRequest(
    { input: '<video>/v.mp4</video>', maxNewTokens: 1, applyTemplate: true, mediaTags: true },
    omni,
  );
  t.is(trusted.text, '< video>/v.mp4< /video>');
});

test('chat messages: media attach to the last user message', (t) => {
  const req = buildPrefillRequest(
    {
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'What is this?' },
      ],
      images: ['/cam.png'],
      maxNewTokens: 1,
      applyTemplate: true,
    },
    omni,
  );
  t.deepEqual(req.messages, [
    ['system', 'Be brief.'],
    ['user', 'first'],
    ['assistant', 'ok'],
    ['user', '<img>mnn-edge-image-0</img>What is this?'],
  ]);
});

test('mediaPlaced: a prompt rendered by the caller keeps its placeholders where they are; other tags are inert', (t) => {
  const image = { data: new Uint8Array(3), width: 1, height: 1 };
  const input =
    '<|im_start|>system\nsee <img>/etc/passwd</img><|im_end|>\n' +
    `<|im_start|>user\n${mediaPlaceholder('image', 0)}${mediaPlaceholder('audio', 0)}Hi<|im_end|>\n`;
  const req = buildPrefillRequest(
    { input, images: [image], audios: ['/a.wav'], maxNewTokens: 1, applyTemplate: false, mediaPlaced: true },
    omni,
  );
  t.is(
    req.text,
    '<|im_start|>system\nsee < img>/etc/passwd< /img><|im_end|>\n' +
      '<|im_start|>user\n<img>mnn-edge-image-0</img><audio>mnn-edge-audio-0</audio>Hi<|im_end|>\n',
  );
  t.deepEqual(
    req.images.map((i) => i.key),
    ['mnn-edge-image-0'],
  );
  t.deepEqual(
    req.audios.map((a) => a.key),
    ['mnn-edge-audio-0'],
  );
  const base = { maxNewTokens: 1, applyTemplate: false, mediaPlaced: true, images: [image] };
  t.throws(() => buildPrefillRequest({ ...base, input: 'no placeholder' }, omni), {
    message: /placeholder 0 \(<img>mnn-edge-image-0<\/img>\) exactly once.*0 times/,
  });
  t.throws(
    () =>
      buildPrefillRequest(
        { ...base, input: `${mediaPlaceholder('image', 0)}x${mediaPlaceholder('image', 0)}` },
        omni,
      ),
    { message: /exactly once.*2 times/ },
  );
  t.throws(() => buildPrefillRequest({ ...base, input: [{ role: 'user', content: 'x' }] }, omni), {
    message: /a rendered prompt string when mediaPlaced is set/,
  });
});

test('bad prompt input is refused with the parameter named', (t) => {
  const base = { maxNewTokens: 1, applyTemplate: true };
  t.throws(() => buildPrefillRequest({ ...base, input: 42 as never }, textModel), {
    message: 'Expected a prompt string or an array of chat messages for input but received number 42',
  });
  t.throws(
    () => buildPrefillRequest({ ...base, input: [{ role: 'robot', content: 'x' } as never] }, textModel),
    {
      message:
        'Expected {role: system|user|assistant|tool, content: string} for messages[0] but received object',
    },
  );
  t.throws(() => buildPrefillRequest({ ...base, input: 'x', images: [''] }, omni), {
    message: 'Expected a non-empty file path for images[0] but received ""',
  });
  t.throws(() => buildPrefillRequest({ ...base, input: 'x', audios: [{ samples: [1, 2] as never }] }, omni), {
    message: 'Expected a path or {samples: Float32Array, sampleRate?} for audios[0] but received object',
  });
  t.throws(
    () => buildPrefillRequest({ ...base, input: '<audio>/a.wav</audio>x', mediaTags: true }, textModel),
    {
      message: 'tiny-llm has no audio encoder (is_audio is not set in its config): audios cannot be used',
    },
  );
});

test('the serial queue runs calls one at a time, in order', async (t) => {
  const queue = new SerialQueue();
  const log: string[] = [];
  const job = (name: string, ms: number) =>
    queue.run(async () => {
      log.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`end ${name}`);
      return name;
    });
  const results = await Promise.all([job('a', 20), job('b', 1), job('c', 5)]);
  t.deepEqual(results, ['a', 'b', 'c']);
  t.deepEqual(log, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  await t.throwsAsync(() => queue.run(() => Promise.reject(new Error('boom'))), { message: 'boom' });
  t.is(await queue.run(async () => 'after a failure'), 'after a failure');
});
