// The workloads' models are the runtime's slots: what each slot state means to a workload, in words.
import test from 'ava';
import { VAD_FRAME_SAMPLES } from '../../agent/workloads/audio/vad.js';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { TalkerTts } from '../../agent/workloads/voice/stages.js';
import { FakeWorkloadRuntime } from './workload-fakes.js';

test('voice.vad: Silero over the runtime when a model is placed, the energy VAD otherwise', async (t) => {
  const runtime = new FakeWorkloadRuntime({});
  const logged: Array<[string, Record<string, unknown>]> = [];
  const models = slotModels(
    () => runtime,
    (msg, fields) => logged.push([msg, fields]),
  );
  t.is(models.vad().kind, 'energy');
  runtime.slots['voice.vad'] = { status: 'builtin', builtin: 'energy-vad' };
  t.is(models.vad().kind, 'energy');
  t.is(models.describe('voice.vad'), 'energy-vad (built-in)');
  t.deepEqual(logged, []);

  runtime.slots['voice.vad'] = { status: 'unloaded', reasons: ['engine host crashed twice'] };
  t.is(models.vad().kind, 'energy');
  t.deepEqual(logged, [
    [
      'Silero VAD unavailable, using the energy VAD',
      { reason: 'Slot voice.vad has no model loaded: engine host crashed twice' },
    ],
  ]);

  runtime.slots['voice.vad'] = { status: 'placed', modelId: 'silero-vad', version: '5', kind: 'vad' };
  const vad = models.vad();
  t.is(vad.kind, 'silero');
  const frame = new Float32Array(VAD_FRAME_SAMPLES).fill(0.25);
  t.is(await vad.process(frame), 0.75);
  t.is(await vad.process(frame), 0.75);
  t.is(runtime.forwards.length, 2);
  const [first, second] = runtime.forwards;
  t.is(first!.slot, 'voice.vad');
  t.deepEqual(
    first!.inputs.map((i) => i.shape),
    [[1, 576], [2, 1, 128], []],
  );
  // The session's recurrent state goes back in on the next frame; the previous frame's tail is the context.
  t.is(first!.inputs[1]!.data[0], 0);
  t.is(second!.inputs[1]!.data[0], 0.5);
  t.is(second!.inputs[0]!.data[0], 0.25);
  t.deepEqual([...first!.inputs[2]!.data], [16000]);
  await vad.dispose();
});

test('chat slots: model id and capabilities from the catalog kind; every missing case says what to do', (t) => {
  const runtime = new FakeWorkloadRuntime({
    'voice.llm': { status: 'degraded', modelId: 'qwen', version: '2', kind: 'llm' },
    'voice.omni': { status: 'placed', modelId: 'omni', version: '1', kind: 'omni' },
    'vision.vlm': { status: 'disabled', reasons: [] },
    'voice.asr': { status: 'builtin', builtin: 'energy-vad' },
  });
  const models = slotModels(() => runtime);
  const llm = models.chat('voice.llm');
  t.is(llm.id, 'qwen');
  t.deepEqual(llm.capabilities, { vision: false, audio: false, talker: false });
  t.deepEqual(models.chat('voice.omni').capabilities, { vision: false, audio: true, talker: false });
  t.is(models.describe('voice.llm'), 'qwen@2 (degraded)');
  t.is(models.missing('vision.vlm'), 'Slot vision.vlm is disabled (slots.vision.vlm.enabled)');
  t.is(
    models.missing('voice.asr'),
    'Slot voice.asr is served by the built-in energy-vad, which is not a language model',
  );
  t.throws(() => models.chat('voice.tts'), {
    code: 'ENOMODEL',
    message:
      'No model placed on slot voice.tts: install one (mnn-edge models import <dir>) and set slots.voice.tts',
  });
  t.false(models.configured('voice.tts'));
  t.true(models.configured('vision.vlm'));

  const stopped = slotModels(() => undefined);
  t.is(stopped.unavailable(), 'The runtime is not running: no model can serve the workloads');
  t.throws(() => stopped.chat('voice.llm'), {
    code: 'ENOENGINE',
    message: 'The runtime is not running: no model can serve the workloads',
  });
  t.is(stopped.vad().kind, 'energy');
});

test('voice.tts: a tts model on the slot speaks through the runtime; a model without a talker is refused', async (t) => {
  const runtime = new FakeWorkloadRuntime({
    'voice.tts': { status: 'placed', modelId: 'qwen3-tts', version: '1', kind: 'tts' },
  });
  const models = slotModels(() => runtime);
  const tts = new TalkerTts(models.chat('voice.tts'));
  const chunks: Array<[number, number]> = [];
  for await (const c of tts.synthesize('Hello there', new AbortController().signal))
    chunks.push([c.samples.length, c.sampleRate]);
  t.deepEqual(chunks, [[240, 24000]]);
  t.deepEqual(runtime.spoken, [{ slot: 'voice.tts', text: 'Hello there' }]);
  runtime.slots['voice.tts'] = { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' };
  t.throws(() => new TalkerTts(models.chat('voice.tts')), {
    message: 'tiny-llm has no talker (has_talker is not set): it cannot be the TTS stage',
  });
});

test('voice.vad host down: the energy VAD answers for those frames, once logged; Silero restarts fresh', async (t) => {
  const runtime = new FakeWorkloadRuntime({
    'voice.vad': { status: 'placed', modelId: 'silero-vad', version: '5', kind: 'vad' },
  });
  const logged: string[] = [];
  const vad = slotModels(
    () => runtime,
    (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields)}`),
  ).vad();
  const loud = new Float32Array(VAD_FRAME_SAMPLES).fill(0.5);
  t.is(await vad.process(loud), 0.75);
  runtime.forwardError = new Error('engine host pid 42 for silero-vad exited unexpectedly (signal SIGKILL)');
  const p1 = await vad.process(loud);
  const p2 = await vad.process(new Float32Array(VAD_FRAME_SAMPLES));
  // The energy detector's own judgement: a loud frame is speech, silence is not.
  t.true(p1 > 0.9, String(p1));
  t.true(p2 < 0.1, String(p2));
  t.deepEqual(logged, [
    'Silero VAD unavailable, the energy VAD answers until it is back {"reason":"engine host pid 42 for silero-vad exited unexpectedly (signal SIGKILL)"}',
  ]);
  runtime.forwardError = undefined;
  t.is(await vad.process(loud), 0.75);
  t.is(logged.at(-1), 'Silero VAD is back {}');
  // The recurrent state was reset when the host went away: the next forward starts from zeros.
  t.is(runtime.forwards.at(-1)!.inputs[1]!.data[0], 0);
});

test("keep_alive's port: load, park and the context go to the runtime when it has them; a double without them cannot park", async (t) => {
  const runtime = new FakeWorkloadRuntime({
    'voice.llm': { status: 'placed', modelId: 'tiny-vlm', version: '1.0.0', kind: 'vlm' },
  });
  const bare = slotModels(() => runtime);
  t.deepEqual(bare.capabilities('voice.llm'), { vision: true, audio: false, talker: false });
  t.is(bare.capabilities('vision.vlm'), undefined);
  t.false(await bare.park('voice.llm', 'test'));
  t.false(bare.parked('voice.llm'));
  t.is(bare.contextTokens('voice.llm'), undefined);
  await t.notThrowsAsync(bare.load('voice.llm'));
  await t.throwsAsync(bare.load('vision.vlm'), { message: /No model placed on slot vision\.vlm/ });

  const parked = new Set<string>();
  const acquired: string[] = [];
  const full = Object.assign(runtime, {
    park: async (slot: 'voice.llm') => {
      parked.add(slot);
      return true;
    },
    isParked: (slot: string) => parked.has(slot),
    contextTokens: () => 2048,
  });
  // Loading is a lease on the runtime's serving, which loads a parked slot again.
  Object.assign(full.serving, {
    acquire: async (slot: string) => {
      acquired.push(slot);
      parked.delete(slot);
      return { kind: 'builtin', slot, builtin: 'energy-vad', release: () => {} } as never;
    },
  });
  const models = slotModels(() => full);
  t.true(await models.park('voice.llm', 'keep_alive 0'));
  t.true(models.parked('voice.llm'));
  t.is(models.contextTokens('voice.llm'), 2048);
  await models.load('voice.llm');
  t.deepEqual(acquired, ['voice.llm']);
  t.false(models.parked('voice.llm'));
});
