// Vision and audio input on the tiny VLM and omni-audio models, and the media guards in front of MNN. Serial: one
// model works at a time, as in the product (one engine host per model); models generating at once in one process
// was aborted once here by glibc ("double free or corruption"; where, is open: see the eighth closing note).
import test from 'ava';
import { EngineError, type GenerateOptions, Llm, mediaPlaceholder } from '../../engine/index.js';
import { engineOrSkip, expectedOutput, llmDemoText, media, models, readWavMono16 } from './_engine.js';

if (engineOrSkip(test, 'multimodal')) {
  test.serial('tiny-vlm: an image prompt runs the vision encoder and equals llm_demo', async (t) => {
    await using vlm = await Llm.load(models.tinyVlm);
    const plain = await vlm.complete('Hello');
    t.is(plain.text, expectedOutput('tiny-vlm').text);
    t.is(plain.stats.visionUs, 0);
    for (const [file, rel] of [
      [media.gradient, 'media/test_gradient_96x80.png'],
      [media.red, 'media/test_red_64x64.png'],
      [media.frame0, 'media/camera-seq/frame-000.png'],
    ] as const) {
      const want = expectedOutput('tiny-vlm', rel);
      const result = await vlm.complete('Hello', { images: [file] });
      t.is(llmDemoText(result.text, result.finishReason), want.text, rel);
      t.is(result.stats.promptTokens, want.promptTokens);
      t.is(result.stats.generatedTokens, want.decodeTokens);
      t.true(result.stats.visionUs > 0);
      t.not(result.text, plain.text);
    }
  });

  test.serial('tiny-vlm: MNN prompt syntax <img>PATH</img> gives the same output as images[]', async (t) => {
    await using vlm = await Llm.load(models.tinyVlm);
    const result = await vlm.complete(`<img>${media.red}</img>Hello`, { mediaTags: true });
    t.is(result.text, expectedOutput('tiny-vlm', 'media/test_red_64x64.png').text);
  });

  test.serial(
    'tiny-vlm: without mediaTags a tag in the text names no file: nothing is opened, the words are answered',
    async (t) => {
      await using vlm = await Llm.load(models.tinyVlm);
      const result = await vlm.complete('<img>/nonexistent/dog.png</img>Hello');
      t.is(result.stats.visionUs, 0);
      t.true(result.text.length > 0);
    },
  );

  test.serial('tiny-vlm: decoded RGB pixels equal the same picture read from its file', async (t) => {
    await using vlm = await Llm.load(models.tinyVlm);
    const rgb = new Uint8Array(64 * 64 * 3);
    // test_red_64x64.png is one colour, (200, 30, 30).
    for (let p = 0; p < rgb.length; p += 3) rgb.set([200, 30, 30], p);
    const result = await vlm.complete('Hello', { images: [{ data: rgb, width: 64, height: 64 }] });
    t.is(result.text, expectedOutput('tiny-vlm', 'media/test_red_64x64.png').text);
    t.true(result.stats.visionUs > 0);
  });

  test.serial(
    'tiny-vlm: a missing or undecodable image is an error, not a silently dropped prompt part',
    async (t) => {
      await using vlm = await Llm.load(models.tinyVlm);
      await t.throwsAsync(() => vlm.complete('Hello', { images: ['/nonexistent/cat.png'] }), {
        instanceOf: EngineError,
        message: 'image file not found: /nonexistent/cat.png',
      });
      await t.throwsAsync(() => vlm.complete('<img>/nonexistent/dog.png</img>Hello', { mediaTags: true }), {
        message: 'image file not found: /nonexistent/dog.png',
      });
      await t.throwsAsync(() => vlm.complete('Hello', { images: [media.vadWav] }), {
        message: `MNN::CV::imread could not decode image: ${media.vadWav}`,
      });
      await t.throwsAsync(
        () => vlm.complete('Hello', { images: [{ data: new Uint8Array(10), width: 64, height: 64 }] }),
        { message: 'RGB image buffer has 10 bytes but 64x64x3 needs 12288' },
      );
      // Still healthy.
      t.is((await vlm.complete('Hello')).text, expectedOutput('tiny-vlm').text);
    },
  );

  test.serial('tiny-omni-audio: audio by path runs the audio encoder and equals llm_demo', async (t) => {
    await using omni = await Llm.load(models.tinyOmniAudio);
    const want = expectedOutput('tiny-omni-audio', 'media/speech-hello-16k.wav');
    const result = await omni.complete('Hello', { audios: [media.speech16k] });
    t.is(llmDemoText(result.text, result.finishReason), want.text);
    t.is(result.finishReason, 'stop');
    t.is(result.stats.promptTokens, want.promptTokens);
    t.is(result.stats.generatedTokens, want.decodeTokens);
    t.true(result.stats.audioUs > 0);
    t.is(result.stats.audioInputSeconds.toFixed(2), '2.10');
  });

  test.serial(
    'tiny-omni-audio: 48 kHz stereo is downmixed and resampled to the same prompt length',
    async (t) => {
      await using omni = await Llm.load(models.tinyOmniAudio);
      const result = await omni.complete('Hello', { audios: [media.speech48kStereo] });
      t.is(result.stats.promptTokens, 63);
      t.true(result.text.startsWith(';in them'));
    },
  );

  // What the agent sends with tools: the model's whole input, template off, the media where the user's turn starts
  // (tiny-vlm and tiny-omni-audio share the plain ChatML template recorded in expected-outputs.json).
  const rendered = (placeholder: string) =>
    `<|im_start|>user\n${placeholder}Hello<|im_end|>\n<|im_start|>assistant\n`;
  const placedCases: {
    kind: 'image' | 'audio';
    model: string;
    fixture: Parameters<typeof expectedOutput>[0];
    file: string;
    media: GenerateOptions;
    encoderUs: 'visionUs' | 'audioUs';
  }[] = [
    {
      kind: 'image',
      model: models.tinyVlm,
      fixture: 'tiny-vlm',
      file: 'media/test_red_64x64.png',
      media: { images: [media.red] },
      encoderUs: 'visionUs',
    },
    {
      kind: 'audio',
      model: models.tinyOmniAudio,
      fixture: 'tiny-omni-audio',
      file: 'media/speech-hello-16k.wav',
      media: { audios: [media.speech16k] },
      encoderUs: 'audioUs',
    },
  ];
  for (const c of placedCases) {
    test.serial(
      `mediaPlaced (${c.kind}): a prompt rendered by the caller with the placeholder in its user turn equals MNN placing it`,
      async (t) => {
        await using llm = await Llm.load(c.model);
        const result = await llm.complete(rendered(mediaPlaceholder(c.kind, 0)), {
          applyTemplate: false,
          mediaPlaced: true,
          ...c.media,
        });
        const want = expectedOutput(c.fixture, c.file);
        t.is(llmDemoText(result.text, result.finishReason), want.text);
        t.is(result.stats.promptTokens, want.promptTokens);
        t.true(result.stats[c.encoderUs] > 0);
      },
    );
  }

  test.serial('tiny-omni-audio: PCM samples give the same output as the file', async (t) => {
    await using omni = await Llm.load(models.tinyOmniAudio);
    const { samples, sampleRate } = readWavMono16(media.speech16k);
    t.is(samples.length, 33631);
    const result = await omni.complete('Hello', { audios: [{ samples, sampleRate }] });
    const want = expectedOutput('tiny-omni-audio', 'media/speech-hello-16k.wav');
    t.is(llmDemoText(result.text, result.finishReason), want.text);
    t.true(result.stats.audioUs > 0);
  });

  test.serial(
    'tiny-omni-audio: a 100-sample clip is refused with a specific error, not a crash',
    async (t) => {
      await using omni = await Llm.load(models.tinyOmniAudio);
      await t.throwsAsync(() => omni.complete('Hello', { audios: [{ samples: new Float32Array(100) }] }), {
        instanceOf: EngineError,
        message: 'audio too short: 100 samples at 16 kHz (PCM input); at least 160 (10 ms) are needed',
      });
      await t.throwsAsync(() => omni.complete('Hello', { audios: ['/nonexistent/hello.wav'] }), {
        message: 'audio file not found: /nonexistent/hello.wav',
      });
      await t.throwsAsync(() => omni.complete('Hello', { audios: [media.red] }), {
        message: `MNN::AUDIO::load could not decode audio (expected WAV PCM 8/16/32-bit or float): ${media.red}`,
      });
      // The model is still healthy, and 160 samples (one whisper frame) are accepted.
      t.is((await omni.complete('Hello')).text, expectedOutput('tiny-omni-audio').text);
      const shortest = await omni.complete('Hello', {
        audios: [{ samples: new Float32Array(160) }],
        maxNewTokens: 2,
      });
      t.is(shortest.stats.generatedTokens, 2);
    },
  );
}
