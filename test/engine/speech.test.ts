// Speech out (talker). No speech model can be had here, so this file needs a talker model named by
// MNN_EDGE_TALKER_MODEL (a config.json with has_talker) and otherwise says why it is skipped.
import test from 'ava';
import { EngineError, Llm, SPEECH_SAMPLE_RATE } from '../../engine/src/index.js';
import { engineOrSkip, models } from './_engine.js';

const talkerModel = process.env['MNN_EDGE_TALKER_MODEL'];

if (engineOrSkip(test, 'speech out')) {
  test('a model without a talker refuses speak() with a specific error', async (t) => {
    await using llm = await Llm.load(models.tinyLlm);
    const err = t.throws(() => llm.speak({ text: 'hi' }), { instanceOf: EngineError });
    t.is(err?.message, `${models.tinyLlm} has no talker (has_talker is not set in its config)`);
  });

  if (talkerModel) {
    test('the talker streams 24 kHz PCM chunks and stops on abort', async (t) => {
      await using llm = await Llm.load(talkerModel);
      t.true(llm.capabilities.talker);
      await llm.complete('Say hello.', { maxNewTokens: 16 });
      let samples = 0;
      for await (const chunk of llm.speak()) {
        t.is(chunk.sampleRate, SPEECH_SAMPLE_RATE);
        samples += chunk.samples.length;
      }
      t.true(samples > 0);
      const abort = new AbortController();
      let chunks = 0;
      for await (const _ of llm.speak({ text: 'A longer sentence to speak.', signal: abort.signal })) {
        chunks++;
        abort.abort();
      }
      t.true(chunks <= 2);
    });
  } else {
    const line =
      'SKIP talker test: no talker model is installed (no speech model can be had here); set MNN_EDGE_TALKER_MODEL to a config.json with has_talker';
    console.log(line);
    test.skip(line, () => {});
  }
}
