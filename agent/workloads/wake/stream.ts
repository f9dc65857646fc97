// One listening stream's wake-word detection: 16 kHz audio in any chunk size, cut into 80 ms frames, each sent
// with the stream's pipeline state to the model on voice.wake (an engine host), giving one score per keyword
// per frame and the detections the keywords' trigger rules make. The state travels with every frame (as the
// VAD's does), so one host serves every stream and a restarted host costs a stream only its warm-up.

import { KeywordTrigger, type TriggerRule } from '../../../engine/index.js';
import { WorkloadError } from '../shared/errors.js';

export const WAKE_FRAME_SAMPLES = 1280;
export const WAKE_FRAME_MS = 80;
/** Frames after a (re)start whose scores are not trusted: the embedding window still holds start-up values. */
export const WAKE_WARMUP_FRAMES = 12;
/** Audio kept for a detection's clip: 2 s up to the frame that detected. */
export const WAKE_RECENT_FRAMES = 25;

/** What a stream needs from the model on voice.wake: the pipeline step in tensor form (engine/src/wake.ts). */
export interface WakeTensorModel {
  forward(
    inputs: Array<{ data: Float32Array; shape: number[] }>,
  ): Promise<Array<{ name: string; data: ArrayLike<number>; shape: number[] }>>;
}

export interface KeywordSetting extends TriggerRule {
  name: string;
  /** Index of its score in the model's `scores` output (the package's head order). */
  index: number;
  /** false: scored and charted, never wakes the board (the gate reads it per detection; default true). */
  enabled?: boolean;
}

/** What a settings change may set on a running stream's keyword. */
export type KeywordRule = TriggerRule & { enabled?: boolean };

export interface WakeDetection {
  keyword: string;
  score: number;
  /** Stream time of the end of the frame that made it. */
  atMs: number;
  /** Sample index (16 kHz, from the start of the stream) where that frame ends. */
  endSample: number;
}

export interface WakeFrame {
  /** Stream time at the end of this frame. */
  atMs: number;
  endSample: number;
  /** Score per keyword name. */
  scores: Record<string, number>;
  detections: WakeDetection[];
}

const EMPTY = new Float32Array(0);

export class WakeStream {
  readonly #model: WakeTensorModel;
  #keywords: Array<{ setting: KeywordSetting; trigger: KeywordTrigger }>;
  #frame = new Float32Array(WAKE_FRAME_SAMPLES);
  #fill = 0;
  #samples = 0;
  #sinceReset = 0;
  #tail: Float32Array = EMPTY;
  #mel: Float32Array = EMPTY;
  #embeddings: Float32Array = EMPTY;
  /** The last frames of audio (references to the frames already made, no copies). */
  #recent: Float32Array[] = [];
  /** Sees every scored frame (the dashboard's chart); set by whoever watches the stream. */
  onFrame: ((frame: WakeFrame) => void) | undefined;

  constructor(model: WakeTensorModel, keywords: readonly KeywordSetting[]) {
    if (keywords.length === 0)
      throw new WorkloadError('ENOMODEL', 'The wake model has no keyword to listen for');
    this.#model = model;
    this.#keywords = keywords.map((setting) => ({ setting, trigger: new KeywordTrigger(setting) }));
  }

  get keywords(): KeywordSetting[] {
    return this.#keywords.map((k) => k.setting);
  }

  /** Changes thresholds, trigger rules and `enabled` in place (a setting changed while listening). */
  updateRules(rules: ReadonlyMap<string, KeywordRule>): void {
    for (const k of this.#keywords) {
      const r = rules.get(k.setting.name);
      if (!r) continue;
      const { threshold, triggerFrames, refractoryMs } = r;
      k.setting = {
        ...k.setting,
        threshold,
        triggerFrames,
        refractoryMs,
        ...(r.enabled !== undefined ? { enabled: r.enabled } : {}),
      };
      k.trigger.rule = { threshold, triggerFrames, refractoryMs };
    }
  }

  /** Samples pushed so far (16 kHz): the stream clock. */
  get samples(): number {
    return this.#samples;
  }

  /** Feeds audio; resolves with every frame completed by it, in order. A model failure rejects and resets. */
  async push(samples: Float32Array): Promise<WakeFrame[]> {
    const out: WakeFrame[] = [];
    let at = 0;
    while (at < samples.length) {
      const n = Math.min(WAKE_FRAME_SAMPLES - this.#fill, samples.length - at);
      this.#frame.set(samples.subarray(at, at + n), this.#fill);
      this.#fill += n;
      at += n;
      this.#samples += n;
      if (this.#fill < WAKE_FRAME_SAMPLES) break;
      const frame = this.#frame;
      this.#frame = new Float32Array(WAKE_FRAME_SAMPLES);
      this.#fill = 0;
      this.#recent.push(frame);
      if (this.#recent.length > WAKE_RECENT_FRAMES) this.#recent.shift();
      out.push(await this.#step(frame, this.#samples));
    }
    return out;
  }

  async #step(frame: Float32Array, endSample: number): Promise<WakeFrame> {
    let outputs: Awaited<ReturnType<WakeTensorModel['forward']>>;
    try {
      outputs = await this.#model.forward([
        { data: frame, shape: [1, WAKE_FRAME_SAMPLES] },
        { data: this.#tail, shape: [this.#tail.length] },
        { data: this.#mel, shape: [this.#mel.length] },
        { data: this.#embeddings, shape: [this.#embeddings.length] },
      ]);
    } catch (err) {
      this.reset();
      throw err;
    }
    const byName = new Map(outputs.map((o) => [o.name, o]));
    const scores = byName.get('scores');
    const tail = byName.get('tail');
    const mel = byName.get('mel');
    const embeddings = byName.get('embeddings');
    if (!scores || !tail || !mel || !embeddings || scores.data.length < this.#keywords.length) {
      this.reset();
      throw new WorkloadError(
        'ENOMODEL',
        `The model on voice.wake answered ${outputs.map((o) => `${o.name} [${o.shape.join(',')}]`).join(', ')}; expected scores [${this.#keywords.length}], tail, mel, embeddings`,
      );
    }
    this.#tail = Float32Array.from(tail.data);
    this.#mel = Float32Array.from(mel.data);
    this.#embeddings = Float32Array.from(embeddings.data);
    const atMs = (endSample / 16000) * 1000;
    const warm = ++this.#sinceReset > WAKE_WARMUP_FRAMES;
    const frameScores: Record<string, number> = {};
    const detections: WakeDetection[] = [];
    for (const { setting, trigger } of this.#keywords) {
      const score = warm ? Number(scores.data[setting.index] ?? 0) : 0;
      frameScores[setting.name] = score;
      if (warm && trigger.push(score, atMs))
        detections.push({ keyword: setting.name, score, atMs, endSample });
    }
    const scored = { atMs, endSample, scores: frameScores, detections };
    this.onFrame?.(scored);
    return scored;
  }

  /** The last `WAKE_RECENT_FRAMES` frames of audio up to the last one scored (a detection's clip). */
  recentAudio(): Float32Array {
    const out = new Float32Array(this.#recent.length * WAKE_FRAME_SAMPLES);
    this.#recent.forEach((f, i) => {
      out.set(f, i * WAKE_FRAME_SAMPLES);
    });
    return out;
  }

  /** Starts the pipeline state afresh (the next frames are warm-up again); the stream clock keeps running. */
  reset(): void {
    this.#tail = EMPTY;
    this.#mel = EMPTY;
    this.#embeddings = EMPTY;
    this.#sinceReset = 0;
    for (const k of this.#keywords) k.trigger.reset();
  }
}
