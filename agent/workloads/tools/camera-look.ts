// "What does the camera see": one fresh frame from the board's camera (vision.camera, through ffmpeg as watch
// mode reads it) and a question to the VLM on vision.vlm, through the vision service's query path and its gate.
import type { VisionConfig } from '../../config/sections/vision.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import { ffmpegFrames, type TimedFrame } from '../vision/frame-sources.js';
import type { VisionService } from '../vision/service.js';
import type { CameraLook } from './builtin.js';

export function cameraLook(
  vision: VisionService,
  config: VisionConfig,
  models: WorkloadModels,
  monotonicMs: () => number,
): CameraLook {
  return {
    missing() {
      if (!config.enabled) return 'vision is disabled (vision.enabled)';
      if (!config.camera) return 'no camera is configured (vision.camera)';
      return models.missing('vision.vlm');
    },
    async describe(question, signal) {
      const camera = config.camera;
      if (!camera) throw new Error('no camera is configured (vision.camera)');
      const stop = new AbortController();
      const frames = ffmpegFrames(
        camera,
        { width: config.frameWidth, height: config.frameHeight, fps: 1 },
        AbortSignal.any([signal, stop.signal]),
        monotonicMs,
      )[Symbol.asyncIterator]();
      let frame: TimedFrame;
      try {
        const first = await frames.next();
        if (first.done) throw new Error(`the camera ${camera} gave no frame`);
        frame = first.value;
      } finally {
        stop.abort();
        await frames.return?.();
      }
      const stream = await vision.query({ frame: frame.frame, question, signal });
      for await (const _ of stream) {
        // the answer is read whole: the tool result is one string
      }
      return (await stream.result).text;
    },
  };
}
