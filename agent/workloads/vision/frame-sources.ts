// Where camera frames come from. ffmpeg (Debian; GStreamer on vendor BSPs can feed the same pipe) turns any
// camera into fixed-size RGB frames: a V4L2 device, an RTSP stream, a video file, or a synthetic test pattern.
// Image files are read directly; the dashboard pushes frames over its WebSocket.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { WorkloadError } from '../shared/errors.js';
import { decodeImage, type RgbFrame } from './image.js';

export interface TimedFrame {
  frame: RgbFrame;
  /** Monotonic ms when the frame was captured (read). */
  atMs: number;
}

export type FrameSource = AsyncIterable<TimedFrame>;

export interface CameraOptions {
  width: number;
  height: number;
  /** Frames per second taken from the camera: a VLM needs a few per minute, not 30 per second. */
  fps: number;
  ffmpeg?: string;
}

/**
 * ffmpeg input arguments for a camera spec: `/dev/videoN` (V4L2), `rtsp://…` (TCP transport: UDP loses frames on
 * Wi-Fi), `lavfi:<graph>` (synthetic, e.g. `lavfi:testsrc=size=320x240:rate=5`), anything else a file.
 */
export function cameraInputArgs(spec: string): string[] {
  if (spec.startsWith('/dev/video')) return ['-f', 'v4l2', '-i', spec];
  if (/^rtsps?:\/\//.test(spec)) return ['-rtsp_transport', 'tcp', '-i', spec];
  if (spec.startsWith('lavfi:')) return ['-f', 'lavfi', '-i', spec.slice('lavfi:'.length)];
  if (spec.length === 0) throw new WorkloadError('EFRAME', 'Camera spec is empty');
  return ['-re', '-i', spec];
}

/** Fixed-size RGB frames from ffmpeg's stdout; stops (and kills ffmpeg) when the signal aborts or the consumer stops. */
export async function* ffmpegFrames(
  spec: string,
  options: CameraOptions,
  signal: AbortSignal,
  clock: () => number,
): FrameSource {
  const { width, height, fps } = options;
  const ffmpeg = options.ffmpeg ?? 'ffmpeg';
  const args = [
    '-v',
    'error',
    '-nostdin',
    ...cameraInputArgs(spec),
    '-vf',
    `fps=${fps},scale=${width}:${height}`,
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    'pipe:1',
  ];
  const child = spawn(ffmpeg, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-500);
  });
  let spawnError: Error | undefined;
  child.once('error', (err) => {
    spawnError = err;
  });
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  const onAbort = () => child.kill('SIGTERM');
  signal.addEventListener('abort', onAbort, { once: true });
  const frameBytes = width * height * 3;
  let pending: Buffer = Buffer.alloc(0);
  try {
    for await (const data of child.stdout as AsyncIterable<Buffer>) {
      pending = pending.length > 0 ? Buffer.concat([pending, data]) : data;
      while (pending.length >= frameBytes) {
        const frame: RgbFrame = { width, height, data: new Uint8Array(pending.subarray(0, frameBytes)) };
        pending = pending.subarray(frameBytes);
        yield { frame, atMs: clock() };
      }
    }
    const code = await closed;
    if (spawnError)
      throw new WorkloadError('ETOOL', `Cannot run ${ffmpeg} for camera ${spec}: ${spawnError.message}`);
    if (!signal.aborted && code !== 0) {
      throw new WorkloadError(
        'EFRAME',
        `Camera ${spec} failed: ffmpeg exited with ${code}: ${stderr.trim()}`,
      );
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (child.exitCode === null) child.kill('SIGTERM');
  }
}

/** A sequence of image files, each read and decoded in turn. */
export async function* imageFiles(paths: readonly string[], clock: () => number): FrameSource {
  for (const path of paths) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (err) {
      throw new WorkloadError('EFRAME', `Cannot read image ${path}: ${(err as Error).message}`);
    }
    yield { frame: await decodeImage(bytes), atMs: clock() };
  }
}
