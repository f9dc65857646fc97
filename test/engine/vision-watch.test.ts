// The camera VLM on the real engine (tiny-vlm): watch mode over media/camera-seq asks where frames.json says the
// scene changed; ffmpeg's synthetic testsrc stands in for a V4L2/RTSP camera in query mode.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { resolveVisionConfig } from '../../agent/workloads/config.js';
import { SlotGate } from '../../agent/workloads/slots/scheduler.js';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { ffmpegFrames, type TimedFrame } from '../../agent/workloads/vision/frame-sources.js';
import { decodePng } from '../../agent/workloads/vision/image.js';
import { VisionService, type WatchAnswer, type WatchRunner } from '../../agent/workloads/vision/service.js';
import { systemClock } from '../../lib/clock.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { engineOrSkip } from './_engine.js';
import { assertServed, startSlotRuntime } from './_slots.js';

const seqDir = join(mediaFixturesDir, 'camera-seq');
const files = (
  JSON.parse(readFileSync(join(seqDir, 'frames.json'), 'utf8')) as { frames: Array<{ file: string }> }
).frames.map((f) => join(seqDir, f.file));

if (engineOrSkip(test, 'vision')) {
  const slots = await startSlotRuntime(['tiny-vlm'], { 'vision.vlm': { model: 'tiny-vlm' } });
  test.after.always(() => slots.close());
  const shared = slotModels(() => slots.runtime);
  const service = () =>
    new VisionService(resolveVisionConfig({ maxNewTokens: 8 }), {
      models: shared,
      gate: new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 2, retryAfterS: 1 }),
      clock: systemClock,
    });

  test.serial('the VLM runs in an engine host on the vision.vlm slot', (t) => {
    assertServed(t, slots.runtime, { 'vision.vlm': { model: 'tiny-vlm' } });
    t.deepEqual(
      slots.runtime.state().instances.map((i) => i.modelId),
      ['tiny-vlm'],
    );
    t.true(shared.chat('vision.vlm').capabilities.vision);
  });

  test.serial('watch mode asks on the first frame and on each scene change of camera-seq', async (t) => {
    let runner!: WatchRunner;
    // One frame at a time, as a slow camera would deliver them, so none is replaced while the VLM answers.
    async function* camera(): AsyncGenerator<TimedFrame> {
      for (const file of files) {
        const seen = new Promise<void>((resolve) => runner.once('frame', () => resolve()));
        yield { frame: decodePng(readFileSync(file)), atMs: systemClock.monotonicMs() };
        await seen;
      }
    }
    const controller = new AbortController();
    runner = service().watch(
      camera(),
      { prompt: 'What changed?', intervalS: 0, onSceneChange: true },
      controller.signal,
    );
    const triggers: Array<string | undefined> = [];
    const answers: WatchAnswer[] = [];
    runner.on('frame', (f) => triggers.push(f.trigger));
    runner.on('answer', (a) => answers.push(a));
    runner.on('error', (e) => t.fail(e.message));
    await runner.done;
    t.deepEqual(triggers, ['first', undefined, 'scene-change', 'scene-change', 'scene-change']);
    t.deepEqual(
      answers.map((a) => a.seq),
      [0, 2, 3, 4],
    );
    t.is(runner.framesDropped, 0);
    for (const a of answers) {
      t.true(a.result.generatedTokens > 0);
      // 16 image tokens + vision_start/end on top of the text prompt (fixtures README).
      t.true(a.result.promptTokens > 18);
      const thumb = decodePng(a.thumbnail);
      t.is(thumb.width, 160);
      t.is(thumb.height, 120);
    }
  });

  test.serial(
    'a camera faster than the VLM: the pending frame is replaced and drops are counted',
    async (t) => {
      async function* burst(): AsyncGenerator<TimedFrame> {
        for (const file of files)
          yield { frame: decodePng(readFileSync(file)), atMs: systemClock.monotonicMs() };
      }
      const runner = service().watch(
        burst(),
        { prompt: 'Hello', intervalS: 0, onSceneChange: true },
        new AbortController().signal,
      );
      await runner.done;
      t.is(runner.framesSeen + runner.framesDropped, files.length);
      t.true(runner.framesDropped > 0);
    },
  );

  test.serial('query mode on a frame from ffmpeg testsrc streams an answer', async (t) => {
    const controller = new AbortController();
    let frame: TimedFrame | undefined;
    for await (const f of ffmpegFrames(
      'lavfi:testsrc=size=320x240:rate=5',
      { width: 320, height: 240, fps: 5 },
      controller.signal,
      () => 0,
    )) {
      frame = f;
      break;
    }
    const stream = await service().query({ frame: frame!.frame, question: 'What do you see?' });
    const pieces: string[] = [];
    for await (const p of stream) pieces.push(p);
    const result = await stream.result;
    t.true(pieces.length > 0);
    t.is(pieces.join(''), result.text);
    t.is(result.generatedTokens, 8);
  });
}
