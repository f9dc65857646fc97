// Speech out through an engine host (the model in a child process) and through the voice workload's TTS stage
// on a runtime slot, on the tiny random-weight talker (engine/tools/tiny-talker).
import test from 'ava';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { TalkerTts } from '../../agent/workloads/voice/stages.js';
import { EngineHostClient, SPEECH_SAMPLE_RATE } from '../../engine/index.js';
import {
  cachedTinyTalker,
  DEFAULT_TALKER_TOKENS,
  tinyTalkerToolchainMissing,
} from '../../engine/tools/tiny-talker/make-tiny-talker.js';
import { createMemoryLogger } from '../../lib/log.js';
import { skipWithLine } from '../helpers/skip.js';
import { engineOrSkip } from './_engine.js';
import { startSlotRuntime } from './_slots.js';

const UTTERANCE = (DEFAULT_TALKER_TOKENS * 2 - 8) * 240;

if (engineOrSkip(test, 'speech out through hosts')) {
  const missing = tinyTalkerToolchainMissing();
  if (missing) {
    skipWithLine(`SKIP talker host tests: the tiny talker cannot be built here: ${missing}`);
  } else {
    const talker = await cachedTinyTalker();

    test('a host streams the talker PCM and stops it on abort', async (t) => {
      await using host = await EngineHostClient.start({ name: 'tiny-talker', logger: createMemoryLogger() });
      const loaded = await host.load(talker);
      t.true(loaded.capabilities.talker);
      let samples = 0;
      let chunks = 0;
      for await (const chunk of host.speak({ text: 'Hello from the board.' })) {
        t.is(chunk.sampleRate, SPEECH_SAMPLE_RATE);
        samples += chunk.samples.length;
        chunks++;
      }
      t.is(samples, UTTERANCE);
      t.true(chunks >= 3);
      const abort = new AbortController();
      let afterAbort = 0;
      for await (const _ of host.speak({ text: 'Cut short.', signal: abort.signal })) {
        if (abort.signal.aborted) afterAbort++;
        abort.abort();
      }
      t.is(afterAbort, 0);
      t.true((await host.complete('Still there?', { maxNewTokens: 2 })).text.length > 0);
    });

    test('the voice TTS stage speaks through the talker serving voice.tts', async (t) => {
      const slots = await startSlotRuntime(
        [{ path: talker.replace(/\/config\.json$/, ''), id: 'tiny-talker' }],
        {
          'voice.tts': { model: 'tiny-talker' },
        },
      );
      t.teardown(() => slots.close());
      const models = slotModels(() => slots.runtime);
      const stage = new TalkerTts(models.chat('voice.tts'));
      let samples = 0;
      for await (const chunk of stage.synthesize('The kitchen light is on.', new AbortController().signal)) {
        t.is(chunk.sampleRate, SPEECH_SAMPLE_RATE);
        samples += chunk.samples.length;
      }
      t.is(samples, UTTERANCE);
      const served = slots.runtime.state().instances.find((i) => i.modelId === 'tiny-talker');
      t.truthy(served);
      t.not(served?.pid, process.pid);
    });
  }
}
