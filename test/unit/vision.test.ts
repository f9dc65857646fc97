import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { resolveVisionConfig } from '../../agent/workloads/config.js';
import { SlotGate, VoicePriority } from '../../agent/workloads/slots/scheduler.js';
import { slotModels } from '../../agent/workloads/slots/slot-models.js';
import { cameraInputArgs, ffmpegFrames, imageFiles } from '../../agent/workloads/vision/frame-sources.js';
import {
  decodeImage,
  decodePng,
  encodePng,
  fitFrame,
  sniffImage,
} from '../../agent/workloads/vision/image.js';
import { LatestFrame } from '../../agent/workloads/vision/latest-frame.js';
import {
  compareFrames,
  defaultSceneChangeOptions,
  SceneChangeDetector,
} from '../../agent/workloads/vision/scene-change.js';
import { VisionService } from '../../agent/workloads/vision/service.js';
import { systemClock } from '../../lib/clock.js';
import { mediaFixturesDir } from '../helpers/paths.js';
import { FakeWorkloadRuntime } from './workload-fakes.js';

const seqDir = join(mediaFixturesDir, 'camera-seq');
const framesJson = JSON.parse(readFileSync(join(seqDir, 'frames.json'), 'utf8')) as {
  frames: Array<{ file: string; vsPrevious?: { meanAbsDiff: number; changedPixelFraction: number } }>;
};
const seqFrames = framesJson.frames.map((f) => decodePng(readFileSync(join(seqDir, f.file))));

test('PNG decoding reads the fixtures and a PNG written by encodePng reads back exactly', (t) => {
  const red = decodePng(readFileSync(join(mediaFixturesDir, 'test_red_64x64.png')));
  t.is(red.width, 64);
  t.deepEqual([...red.data.subarray(0, 3)], [200, 30, 30]);
  t.true(
    red.data.every((v, i) => v === red.data[i % 3]),
    'one colour everywhere',
  );
  const f = seqFrames[3]!;
  t.is(f.width, 320);
  t.is(f.height, 240);
  const back = decodePng(encodePng(f));
  t.deepEqual(back, f);
});

test('scene change matches frames.json at full resolution and fires where the scene changed', (t) => {
  for (let i = 1; i < seqFrames.length; i++) {
    const expected = framesJson.frames[i]!.vsPrevious!;
    const d = compareFrames(seqFrames[i - 1]!, seqFrames[i]!, {
      ...defaultSceneChangeOptions,
      pixelDelta: 0,
    });
    t.true(Math.abs(d.meanAbsDiff - expected.meanAbsDiff) < 0.01, `frame ${i}: ${d.meanAbsDiff}`);
    t.true(
      Math.abs(d.changedFraction - expected.changedPixelFraction) < 0.001,
      `frame ${i}: ${d.changedFraction}`,
    );
  }
  const detector = new SceneChangeDetector();
  t.deepEqual(
    seqFrames.map((f) => detector.update(f).changed),
    [true, false, true, true, true],
  );
});

test('frames that are not images are refused with a specific error', async (t) => {
  t.is(sniffImage(Buffer.from('hello')), undefined);
  await t.throwsAsync(decodeImage(Buffer.from('definitely not a picture')), {
    code: 'EFRAME',
    message: 'Frame is not an image: expected PNG, JPEG, BMP, WebP or GIF data',
  });
  const png = encodePng(seqFrames[0]!);
  t.throws(() => decodePng(png.subarray(0, 60)), { code: 'EFRAME' });
});

test('JPEG frames decode through ffmpeg', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const jpeg = execFileSync('ffmpeg', [
    '-v',
    'error',
    '-i',
    join(seqDir, 'frame-000.png'),
    '-f',
    'image2pipe',
    '-vcodec',
    'mjpeg',
    'pipe:1',
  ]);
  t.is(sniffImage(jpeg), 'jpeg');
  const frame = await decodeImage(jpeg);
  t.is(frame.width, 320);
  t.true(compareFrames(frame, seqFrames[0]!, defaultSceneChangeOptions).meanAbsDiff < 3);
});

test('fitFrame keeps the aspect ratio and averages areas', (t) => {
  const small = fitFrame(seqFrames[0]!, 160, 160);
  t.is(small.width, 160);
  t.is(small.height, 120);
  t.is(fitFrame(small, 1000, 1000), small);
});

test('camera specs map to ffmpeg inputs; lavfi testsrc stands in for a V4L2/RTSP camera', async (t) => {
  t.deepEqual(cameraInputArgs('/dev/video0'), ['-f', 'v4l2', '-i', '/dev/video0']);
  t.deepEqual(cameraInputArgs('rtsp://cam.local/stream'), [
    '-rtsp_transport',
    'tcp',
    '-i',
    'rtsp://cam.local/stream',
  ]);
  const controller = new AbortController();
  const frames = [];
  for await (const f of ffmpegFrames(
    'lavfi:testsrc=size=320x240:rate=10',
    { width: 160, height: 120, fps: 10 },
    controller.signal,
    () => systemClock.monotonicMs(),
  )) {
    frames.push(f);
    if (frames.length === 3) break;
  }
  t.is(frames.length, 3);
  t.true(frames.every((f) => f.frame.width === 160 && f.frame.data.length === 160 * 120 * 3));
  await t.throwsAsync(
    (async () => {
      for await (const _ of ffmpegFrames(
        '/nonexistent/video.mp4',
        { width: 8, height: 8, fps: 1 },
        controller.signal,
        () => 0,
      )) {
        // no frames
      }
    })(),
    { code: 'EFRAME', message: /^Camera \/nonexistent\/video\.mp4 failed: ffmpeg exited with 1: / },
  );
});

test('at most one pending frame: newer frames replace it and drops are counted', async (t) => {
  const q = new LatestFrame();
  for (let i = 0; i < 5; i++) q.put({ frame: seqFrames[0]!, atMs: i });
  t.is(q.dropped, 4);
  t.is((await q.take())!.atMs, 4);
  const waiting = q.take();
  q.put({ frame: seqFrames[0]!, atMs: 9 });
  t.is((await waiting)!.atMs, 9);
  q.put({ frame: seqFrames[0]!, atMs: 10 });
  q.end();
  t.is((await q.take())!.atMs, 10, 'the last frame of a finished source is still taken');
  t.is(await q.take(), undefined);
  q.close();
  t.is(await q.take(), undefined);
});

test('the slot gate queues up to its limit and refuses beyond it with a retry hint', async (t) => {
  const gate = new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 1, retryAfterS: 3 });
  const release1 = await gate.acquire();
  const second = gate.acquire();
  await t.throwsAsync(gate.acquire(), {
    code: 'EBUSY',
    message: 'The vision.vlm model is busy: 1 running and 1 waiting; retry in 3 s',
  });
  release1();
  const release2 = await second;
  t.is(gate.running, 1);
  release2();
  t.is(gate.running, 0);
});

test('voice priority holds background work until the voice turn ends', async (t) => {
  const p = new VoicePriority();
  p.begin();
  let resumed = false;
  const waiting = p.waitForVoiceIdle().then(() => {
    resumed = true;
  });
  await new Promise((r) => setTimeout(r, 10));
  t.false(resumed);
  p.end();
  await waiting;
  t.true(resumed);
});

test('waits on a long-lived signal leave no abort listener behind once they end', async (t) => {
  // A watch loop passes one signal to every wait for hours; each finished wait must take its listener away
  // (the soak saw "MaxListenersExceededWarning: 11 abort listeners" when they did not).
  const watch = new AbortController();
  const gate = new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 });
  const priority = new VoicePriority();
  for (let i = 0; i < 20; i++) {
    const holder = await gate.acquire(watch.signal);
    const queued = gate.acquire(watch.signal);
    holder();
    (await queued)();
    priority.begin();
    const idle = priority.waitForVoiceIdle(watch.signal);
    priority.end();
    await idle;
  }
  t.is(getEventListeners(watch.signal, 'abort').length, 0);
  t.is(gate.running, 0);
  // An abort still reaches a wait in progress.
  const holder = await gate.acquire();
  const queued = gate.acquire(watch.signal);
  watch.abort(new Error('watch stopped'));
  await t.throwsAsync(queued, { message: 'watch stopped' });
  t.is(gate.queued, 0);
  holder();
});

test('vision without the engine reports it, and bad frames are refused first', async (t) => {
  const reason = 'MNN engine not available: libMNN.so is not installed';
  const runtime = new FakeWorkloadRuntime(
    { 'vision.vlm': { status: 'placed', modelId: 'tiny-vlm', version: '1', kind: 'vlm' } },
    reason,
  );
  const service = new VisionService(resolveVisionConfig({}), {
    models: slotModels(() => runtime),
    gate: new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 }),
    clock: systemClock,
  });
  await t.throwsAsync(service.query({ frame: seqFrames[0]!, question: 'What is there?' }), {
    code: 'ENOENGINE',
    message: reason,
  });
  await t.throwsAsync(
    service.query({ frame: { width: 10, height: 10, data: new Uint8Array(5) }, question: 'x' }),
    {
      message: 'Frame data is 5 bytes, expected 10×10×3 RGB bytes',
    },
  );
  const watcher = service.watch(
    imageFiles([join(seqDir, 'frame-000.png')], () => 0),
    { prompt: 'p', intervalS: 0, onSceneChange: true },
    new AbortController().signal,
  );
  const errors: string[] = [];
  watcher.on('error', (e) => errors.push(e.message));
  await watcher.done;
  t.deepEqual(errors, [reason]);
  t.deepEqual(runtime.requests, [], 'nothing reached the runtime');
});

test('vision asks the vision.vlm slot, and refuses a model that is not a VLM', async (t) => {
  const runtime = new FakeWorkloadRuntime({
    'vision.vlm': { status: 'placed', modelId: 'tiny-vlm', version: '1', kind: 'vlm' },
  });
  const service = new VisionService(
    resolveVisionConfig({ frameWidth: 32, frameHeight: 32, maxNewTokens: 7 }),
    {
      models: slotModels(() => runtime),
      gate: new SlotGate('vision.vlm', { concurrency: 1, maxQueued: 1, retryAfterS: 1 }),
      clock: systemClock,
    },
  );
  const stream = await service.query({ frame: seqFrames[0]!, question: 'What is there?' });
  const pieces: string[] = [];
  for await (const p of stream) pieces.push(p);
  t.deepEqual(pieces, ['vision.vlm says hi']);
  t.is((await stream.result).finishReason, 'stop');
  t.is(runtime.requests.length, 1);
  const sent = runtime.requests[0]!;
  t.is(sent.slot, 'vision.vlm');
  t.deepEqual(sent.request.prompt, [{ role: 'user', content: 'What is there?' }]);
  t.is(sent.request.maxNewTokens, 7);
  const image = sent.request.images?.[0];
  t.true(typeof image === 'object' && image.data.length === image.width * image.height * 3);

  runtime.slots['vision.vlm'] = { status: 'placed', modelId: 'tiny-llm', version: '1', kind: 'llm' };
  await t.throwsAsync(service.query({ frame: seqFrames[0]!, question: 'x' }), {
    code: 'ENOMODEL',
    message: 'tiny-llm has no vision encoder (is_visual is not set): it cannot answer about images',
  });
  delete runtime.slots['vision.vlm'];
  await t.throwsAsync(service.query({ frame: seqFrames[0]!, question: 'x' }), {
    code: 'ENOMODEL',
    message:
      'No model placed on slot vision.vlm: install one (mnn-edge models import <dir>) and set slots.vision.vlm',
  });
});
