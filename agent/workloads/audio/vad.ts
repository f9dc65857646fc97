// Voice activity detectors. Both take 32 ms frames (512 samples at 16 kHz) so the segmenter's timing does not
// depend on which one runs: Silero VAD in an engine host when a model is placed on the voice.vad slot, an energy
// detector with an adaptive noise floor otherwise (see ../slots/slot-models.ts for the choice).

import { WorkloadError } from '../shared/errors.js';
import { dbfs, PIPELINE_RATE, rms } from './pcm.js';

export const VAD_FRAME_SAMPLES = 512;
export const VAD_FRAME_MS = (VAD_FRAME_SAMPLES / PIPELINE_RATE) * 1000;

export interface VoiceActivityDetector {
  readonly kind: 'silero' | 'energy';
  /** Speech probability in [0, 1] for one frame of exactly VAD_FRAME_SAMPLES samples of 16 kHz mono. */
  process(frame: Float32Array): Promise<number>;
  /** Forget recurrent state between unrelated streams. */
  reset(): void;
  dispose(): Promise<void>;
}

function checkFrame(frame: Float32Array): void {
  if (!(frame instanceof Float32Array) || frame.length !== VAD_FRAME_SAMPLES) {
    throw new WorkloadError(
      'EAUDIO',
      `VAD frame must be a Float32Array of ${VAD_FRAME_SAMPLES} samples, got ${frame instanceof Float32Array ? frame.length : typeof frame}`,
    );
  }
}

export interface EnergyVadOptions {
  /** Frames quieter than this are never speech, whatever the noise floor. */
  absoluteThresholdDb: number;
  /** How far above the tracked noise floor a frame must be to count as speech. */
  snrDb: number;
  /** How fast the floor rises toward louder frames (dB per frame); it falls at once, so pauses re-anchor it. */
  floorRiseDbPerFrame: number;
}

export const defaultEnergyVadOptions: EnergyVadOptions = {
  absoluteThresholdDb: -45,
  snrDb: 12,
  floorRiseDbPerFrame: 0.05,
};

/** Level-over-noise-floor detector: cheap, language-agnostic, fooled by loud non-speech (music, fans). */
export class EnergyVad implements VoiceActivityDetector {
  readonly kind = 'energy';
  readonly #options: EnergyVadOptions;
  #floorDb = -120;

  constructor(options: Partial<EnergyVadOptions> = {}) {
    this.#options = { ...defaultEnergyVadOptions, ...options };
  }

  async process(frame: Float32Array): Promise<number> {
    checkFrame(frame);
    const level = dbfs(rms(frame));
    const threshold = Math.max(this.#options.absoluteThresholdDb, this.#floorDb + this.#options.snrDb);
    this.#floorDb = level < this.#floorDb ? level : this.#floorDb + this.#options.floorRiseDbPerFrame;
    // A logistic over dB gives the segmenter a probability with the same meaning as Silero's (0.5 at threshold).
    return 1 / (1 + Math.exp(-(level - threshold) / 2));
  }

  reset(): void {
    this.#floorDb = -120;
  }

  async dispose(): Promise<void> {}
}

/** What SileroVad needs from the Module serving voice.vad: one forward call with typed tensors. */
export interface TensorModel {
  forward(
    inputs: Array<{ data: Float32Array | Int32Array; shape: number[] }>,
  ): Promise<Array<{ data: ArrayLike<number>; shape: number[] }>>;
  dispose(): Promise<void>;
}

const SILERO_CONTEXT = 64;
const SILERO_STATE = 2 * 1 * 128;

/**
 * Silero VAD v5: each call takes 64 samples of context (the previous frame's tail) + 512 new samples and carries
 * a [2,1,128] recurrent state, so frames must arrive in order and one stream at a time.
 */
export class SileroVad implements VoiceActivityDetector {
  readonly kind = 'silero';
  readonly #model: TensorModel;
  readonly #input = new Float32Array(SILERO_CONTEXT + VAD_FRAME_SAMPLES);
  readonly #sr = new Int32Array([PIPELINE_RATE]);
  #state = new Float32Array(SILERO_STATE);

  constructor(model: TensorModel) {
    this.#model = model;
  }

  async process(frame: Float32Array): Promise<number> {
    checkFrame(frame);
    this.#input.copyWithin(0, VAD_FRAME_SAMPLES);
    this.#input.set(frame, SILERO_CONTEXT);
    const [prob, stateN] = await this.#model.forward([
      { data: this.#input, shape: [1, SILERO_CONTEXT + VAD_FRAME_SAMPLES] },
      { data: this.#state, shape: [2, 1, 128] },
      { data: this.#sr, shape: [] },
    ]);
    if (!prob || !stateN || stateN.data.length !== SILERO_STATE) {
      throw new WorkloadError(
        'ENOMODEL',
        'Silero VAD returned unexpected outputs (expected output [1,1], stateN [2,1,128])',
      );
    }
    this.#state = Float32Array.from(stateN.data);
    return prob.data[0] ?? 0;
  }

  reset(): void {
    this.#input.fill(0);
    this.#state = new Float32Array(SILERO_STATE);
  }

  dispose(): Promise<void> {
    return this.#model.dispose();
  }
}
