import type { JsonSchema } from '../../../lib/schema.js';

// The `vision` section: the camera, watch mode and the limits that keep one camera from starving the SoC. The VLM
// is the runtime's `vision.vlm` slot (the `slots` section).

export interface VisionConfig {
  enabled: boolean;
  /** The board's camera for watch mode: a V4L2 device (/dev/video0), an RTSP URL or a file; none by default. */
  camera?: string;
  /** Frames are scaled to this width before they reach the model and the scene-change detector. */
  frameWidth: number;
  frameHeight: number;
  maxNewTokens: number;
  watch: {
    enabled: boolean;
    prompt: string;
    /** Ask at most this often, and at least this often when nothing changes (0 = only on scene change). */
    intervalS: number;
    /** Also ask as soon as the scene changes. */
    onSceneChange: boolean;
    /** Scene change: mean absolute difference (0–255) over the downscaled frame … */
    meanAbsDiff: number;
    /** … or this share of pixels changed by more than 24 levels. */
    changedFraction: number;
    thumbnailWidth: number;
  };
  /** Bytes of one uploaded frame (WebSocket or OpenAI image_url). */
  maxFrameBytes: number;
  /** Concurrent VLM requests and how many may wait; beyond that callers get 429 with Retry-After. */
  concurrency: number;
  maxQueued: number;
  retryAfterS: number;
  /** Let a voice turn pause watch mode (voice has priority on a shared SoC). */
  yieldToVoice: boolean;
}

export const visionDefaults: VisionConfig = {
  enabled: true,
  frameWidth: 448,
  frameHeight: 448,
  maxNewTokens: 128,
  watch: {
    enabled: false,
    prompt: 'Describe what changed in the scene in one sentence.',
    intervalS: 30,
    onSceneChange: true,
    meanAbsDiff: 3,
    changedFraction: 0.02,
    thumbnailWidth: 160,
  },
  maxFrameBytes: 8 * 1024 * 1024,
  concurrency: 1,
  maxQueued: 4,
  retryAfterS: 2,
  yieldToVoice: true,
};

const int = (minimum: number, maximum?: number): JsonSchema => ({
  type: 'integer',
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
});

export const visionSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    camera: { type: 'string', minLength: 1 },
    frameWidth: int(16, 4096),
    frameHeight: int(16, 4096),
    maxNewTokens: int(1, 8192),
    watch: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        prompt: { type: 'string', minLength: 1 },
        intervalS: { type: 'number', minimum: 0 },
        onSceneChange: { type: 'boolean' },
        meanAbsDiff: { type: 'number', minimum: 0, maximum: 255 },
        changedFraction: { type: 'number', minimum: 0, maximum: 1 },
        thumbnailWidth: int(16, 1024),
      },
    },
    maxFrameBytes: int(1024),
    concurrency: int(1, 16),
    maxQueued: int(0, 1000),
    retryAfterS: int(1, 3600),
    yieldToVoice: { type: 'boolean' },
  },
};
