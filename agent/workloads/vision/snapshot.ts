// One frame from the board's camera now, for a question asked on demand (the MCP server's camera tools): the
// same ffmpeg pipe the watch mode reads, stopped after its first frame. Opening a V4L2 device takes a moment,
// and a second reader of a busy device may be refused, so the caller bounds the wait with its signal.
import { WorkloadError } from '../shared/errors.js';
import { ffmpegFrames } from './frame-sources.js';
import type { RgbFrame } from './image.js';

export async function snapshot(
  camera: string,
  size: { width: number; height: number },
  signal: AbortSignal,
): Promise<RgbFrame> {
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  try {
    // The camera's own rate (25 covers most): a lower fps filter drops a still image's only frame.
    for await (const { frame } of ffmpegFrames(camera, { ...size, fps: 25 }, both, () => 0)) return frame;
  } finally {
    stop.abort();
  }
  if (signal.aborted) throw signal.reason;
  throw new WorkloadError('EFRAME', `Camera ${camera} gave no frame`);
}
