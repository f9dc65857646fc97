import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { resolveVisionConfig } from '../../agent/workloads/config.js';
import type { ChatModel, ChatRequest, ChatResult } from '../../agent/workloads/shared/chat-model.js';
import { SlotGate, VoicePriority } from '../../agent/workloads/slots/scheduler.js';
import type { TimedFrame } from '../../agent/workloads/vision/frame-sources.js';
import { decodePng } from '../../agent/workloads/vision/image.js';
import { VisionService, type WatchRunner } from '../../agent/workloads/vision/service.js';
import type { Clock } from '../../lib/clock.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { fakeModels } from './workload-fakes.js';

// A stand-in VLM that answers with the size of the image it got, and a clock the test moves.
class FakeVlm implements ChatModel {
  readonly id = 'fake-vlm';
  readonly capabilities = { vision: true, audio: false, talker: false };
  readonly requests: ChatRequest[] = [];
  generate(request: ChatRequest) {
    this.requests.push(request);
    const img = request.images?.[0];
    const text = typeof img === 'object' ? `${img.width}x${img.height}` : 'none';
    const result: ChatResult = {
      text,
      finishReason: 'stop',
      promptTokens: 3,
      generatedTokens: 1,
      prefillMs: 1,
      decodeMs: 1,
    };
    async function* run() {
      yield text;
    }
    const gen = run();
    return { result: Promise.resolve(result), [Symbol.asyncIterator]: () => gen };
  }
}

const frame0 = decodePng(readFileSync(join(mediaFixturesDir, 'camera-seq', 'frame-000.png')));

function setup(priority?: VoicePriority) {
  let now = 0;
  const clock: Clock = { monotonicMs: () => now, nowMs: () => 1_700_000_000_000 + now };
  const vlm = new FakeVlm();
  const service = new VisionService(resolveVisionConfig({ frameWidth: 160, frameHeight: 160 }), {
    models: fakeModels({ 'vision.vlm': vlm }),
    gate: new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 }),
    clock,
    ...(priority ? { priority } : {}),
  });
  return { service, vlm, advance: (ms: number) => (now += ms) };
}

/** The same frame every `stepMs`, one at a time (each waits until the watcher has looked at the previous). */
function steadyCamera(
  count: number,
  stepMs: number,
  advance: (ms: number) => void,
  runner: () => WatchRunner,
) {
  return (async function* (): AsyncGenerator<TimedFrame> {
    for (let i = 0; i < count; i++) {
      const seen = new Promise<void>((resolve) => runner().once('frame', () => resolve()));
      yield { frame: frame0, atMs: 0 };
      await seen;
      advance(stepMs);
    }
  })();
}

test('watch mode on an unchanging scene asks on the first frame and then once per interval', async (t) => {
  const { service, vlm, advance } = setup();
  let runner!: WatchRunner;
  runner = service.watch(
    steadyCamera(7, 1000, advance, () => runner),
    { prompt: 'Anything new?', intervalS: 3, onSceneChange: true },
    new AbortController().signal,
  );
  const triggers: Array<string | undefined> = [];
  runner.on('frame', (f) => triggers.push(f.trigger));
  const answers: string[] = [];
  runner.on('answer', (a) => answers.push(`${a.trigger}:${a.text}`));
  await runner.done;
  t.deepEqual(triggers, ['first', undefined, undefined, 'interval', undefined, undefined, 'interval']);
  t.deepEqual(answers, ['first:160x120', 'interval:160x120', 'interval:160x120']);
  t.is(vlm.requests[0]!.messages[0]!.content, 'Anything new?');
});

test('a voice turn pauses watch mode until it ends', async (t) => {
  const priority = new VoicePriority();
  const { service, vlm, advance } = setup(priority);
  priority.begin();
  let runner!: WatchRunner;
  runner = service.watch(
    steadyCamera(1, 0, advance, () => runner),
    { prompt: 'p', intervalS: 0, onSceneChange: true },
    new AbortController().signal,
  );
  const paused = new Promise<void>((resolve) => runner.once('paused', () => resolve()));
  await paused;
  t.is(vlm.requests.length, 0, 'nothing asked while voice runs');
  priority.end();
  await runner.done;
  t.is(vlm.requests.length, 1);
});

test('stopping watch mode with its signal ends it', async (t) => {
  const { service } = setup();
  const controller = new AbortController();
  const endless = (async function* (): AsyncGenerator<TimedFrame> {
    for (;;) {
      await new Promise((r) => setTimeout(r, 5));
      yield { frame: frame0, atMs: 0 };
    }
  })();
  const runner = service.watch(
    endless,
    { prompt: 'p', intervalS: 0, onSceneChange: true },
    controller.signal,
  );
  await new Promise<void>((resolve) => runner.once('answer', () => resolve()));
  controller.abort();
  await runner.done;
  t.true(runner.framesSeen >= 1);
});
