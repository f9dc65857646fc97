// Speech out through MNN's omni talker, on the tiny random-weight talker package that
// engine/tools/tiny-talker builds (cached in the temp dir): thinker -> talker codec tokens -> DiT -> vocoder.
import test from 'ava';
import { EngineError, Llm, SPEECH_SAMPLE_RATE, type SpeechChunk } from '../../engine/index.js';
import {
  cachedTinyTalker,
  DEFAULT_TALKER_TOKENS,
  tinyTalkerToolchainMissing,
} from '../../engine/tools/tiny-talker/make-tiny-talker.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip, models } from './_engine.js';

// MNN's token2wav: 2 mel frames per codec token, 240 samples per frame; DiT runs in windows of 60 codes (with 24
// of left context after the first), and the vocoder holds back 8 frames of right context until the end.
const SAMPLES_PER_CODE = 480;
const FIRST_CHUNK = (120 - 8) * 240;
const MIDDLE_CHUNK = 120 * 240;
const UTTERANCE = (DEFAULT_TALKER_TOKENS * 2 - 8) * 240;

async function collect(speech: AsyncIterable<SpeechChunk>): Promise<SpeechChunk[]> {
  const chunks: SpeechChunk[] = [];
  for await (const chunk of speech) chunks.push(chunk);
  return chunks;
}

function total(chunks: SpeechChunk[]): number {
  return chunks.reduce((n, c) => n + c.samples.length, 0);
}

if (engineOrSkip(test, 'speech out')) {
  // Built before any test is declared (ava takes declarations only synchronously after the file's awaits).
  const missing = tinyTalkerToolchainMissing();
  const talker = missing ? undefined : await cachedTinyTalker();

  test('a model without a talker refuses speak() with a specific error', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const err = t.throws(() => llm.speak({ text: 'hi' }), { instanceOf: EngineError });
    t.is(err?.message, `${models.tinyLlm} has no talker (has_talker is not set in its config)`);
  });

  if (missing || talker === undefined) {
    skipWithLine(`SKIP talker tests: the tiny talker cannot be built here: ${missing}`);
  } else {
    test('the talker voices the last generation as 24 kHz float PCM, one chunk per DiT window', async (t) => {
      await using llm = await Llm.load(talker);
      t.true(llm.capabilities.talker);
      const answer = await llm.complete('Say hello.', { maxNewTokens: 8 });
      t.true(answer.text.length > 0);
      const chunks = await collect(llm.speak());
      t.true(chunks.length >= 3, `${chunks.length} chunks`);
      for (const c of chunks) {
        t.is(c.sampleRate, SPEECH_SAMPLE_RATE);
        t.true(c.samples instanceof Float32Array);
        t.true(
          c.samples.every((s) => Number.isFinite(s) && Math.abs(s) <= 1),
          'samples are finite and within [-1, 1]',
        );
      }
      t.is(chunks[0]!.samples.length, FIRST_CHUNK);
      for (const c of chunks.slice(1, -1)) t.is(c.samples.length, MIDDLE_CHUNK);
      t.deepEqual(
        chunks.map((c) => c.last),
        chunks.map((_, i) => i === chunks.length - 1),
      );
      t.is(total(chunks), UTTERANCE);
      t.true(total(chunks) > (DEFAULT_TALKER_TOKENS - 10) * SAMPLES_PER_CODE);
      t.true(
        chunks.some((c) => c.samples.some((s) => s !== 0)),
        'not silence',
      );
    });

    test('a generation is voiced once; speak() before any says why it cannot', async (t) => {
      await using llm = await Llm.load(talker);
      const before = await t.throwsAsync(collect(llm.speak()), { instanceOf: EngineError });
      t.is(before?.code, 'ESTATE');
      t.regex(before?.message ?? '', /nothing to voice/);
      await llm.complete('Hi.', { maxNewTokens: 4 });
      t.is(total(await collect(llm.speak())), UTTERANCE);
      const again = await t.throwsAsync(collect(llm.speak()), { instanceOf: EngineError });
      t.is(again?.code, 'ESTATE');
    });

    test('speak({text}) voices a given text, and the model answers normally afterwards', async (t) => {
      await using llm = await Llm.load(talker);
      const chunks = await collect(llm.speak({ text: 'Turn the light on, please.' }));
      t.is(total(chunks), UTTERANCE);
      t.true(chunks.at(-1)!.last);
      const answer = await llm.complete('Hello?', { maxNewTokens: 4 });
      t.true(answer.text.length > 0);
      // A media tag in the text is read as text, not as a file to load.
      t.is(total(await collect(llm.speak({ text: '<audio>/nonexistent.wav</audio> done' }))), UTTERANCE);
    });

    test('aborting mid-speech ends the stream at once; the next utterance is whole', async (t) => {
      await using llm = await Llm.load(talker);
      const abort = new AbortController();
      let chunks = 0;
      for await (const _ of llm.speak({ text: 'A sentence that is cut short.', signal: abort.signal })) {
        chunks++;
        abort.abort();
      }
      t.is(chunks, 1);
      // Breaking off the loop stops it the same way.
      for await (const _ of llm.speak({ text: 'Another one.' })) break;
      t.is(total(await collect(llm.speak({ text: 'And a whole one.' }))), UTTERANCE);
      const aborted = new AbortController();
      aborted.abort();
      await t.throwsAsync(collect(llm.speak({ text: 'Never.', signal: aborted.signal })), { any: true });
      t.true((await llm.complete('Still there?', { maxNewTokens: 2 })).text.length > 0);
    });
  }
}
