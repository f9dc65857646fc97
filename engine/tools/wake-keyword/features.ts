// Features and scores of clips through the real pipeline (MNN, the same streaming steps the engine host runs),
// so a head is trained on exactly what it will see, and evaluated the way the board detects.

import { WAKE_FRAME_SAMPLES, type WakePipeline, type WakeState } from '../../src/wake.js';
import { KeywordTrigger, type TriggerRule } from '../../src/wake-trigger.js';
import type { Clip } from './corpus.js';
import { RATE } from './speech.js';

export const FRAME_MS = (WAKE_FRAME_SAMPLES / RATE) * 1000;

/** The clip in 1280-sample frames, the last one zero-padded. */
export function* frames(audio: Float32Array): Generator<Float32Array> {
  for (let at = 0; at < audio.length; at += WAKE_FRAME_SAMPLES) {
    const f = new Float32Array(WAKE_FRAME_SAMPLES);
    f.set(audio.subarray(at, Math.min(audio.length, at + WAKE_FRAME_SAMPLES)));
    yield f;
  }
}

/** The 16-embedding window after each frame; window j covers audio up to sample 1280·(j+1). */
export async function clipWindows(pipeline: WakePipeline, audio: Float32Array): Promise<Float32Array[]> {
  let state: WakeState = pipeline.initialState();
  const out: Float32Array[] = [];
  for (const f of frames(audio)) {
    state = await pipeline.features(f, state);
    out.push(state.embeddings);
  }
  return out;
}

export interface LabelledWindows {
  positives: Float32Array[];
  negatives: Float32Array[];
}

/** A fresh stream's first windows hold the start-up embeddings, which a running board never sees again. */
const SKIP_FRAMES = 12;
/** Windows ending this soon after the keyword are positives… */
const POSITIVE_AFTER_MS = 320;
/** …and windows ending this long before its end (the phrase only begun) are negatives. 240 ms rather than 400
 *  (recipe 4): "hey comp…" then counts against the keyword, and on the development set false accepts at 10 %
 *  false rejects fell from 5–7 to 3–4 an hour (most false accepts are phrases that begin like the keyword). */
const PARTIAL_BEFORE_MS = 240;

export async function labelClip(pipeline: WakePipeline, clip: Clip, into: LabelledWindows): Promise<void> {
  const windows = await clipWindows(pipeline, clip.audio);
  for (const [j, w] of windows.entries()) {
    if (j < SKIP_FRAMES) continue;
    const end = (j + 1) * WAKE_FRAME_SAMPLES;
    if (clip.keywordEnd === undefined) {
      into.negatives.push(w);
      continue;
    }
    const after = ((end - clip.keywordEnd) / RATE) * 1000;
    if (after >= 0 && after < POSITIVE_AFTER_MS) into.positives.push(w);
    else if (after < -PARTIAL_BEFORE_MS) into.negatives.push(w);
  }
}

export interface StreamResult {
  /** Per frame, the score of each keyword. */
  scores: Float32Array[];
  /** Frame indexes of detections. */
  detections: number[];
}

/** Scores a stream as the board would: one state carried across it, the trigger rule over keyword `k`. */
export async function detectStream(
  pipeline: WakePipeline,
  audio: Float32Array,
  rule: TriggerRule,
  k = 0,
  keepScores = false,
): Promise<StreamResult> {
  let state = pipeline.initialState();
  const trigger = new KeywordTrigger(rule);
  const scores: Float32Array[] = [];
  const detections: number[] = [];
  let j = 0;
  for (const f of frames(audio)) {
    const r = await pipeline.step(f, state);
    state = r.state;
    if (keepScores) scores.push(r.scores);
    if (j >= SKIP_FRAMES && trigger.push(r.scores[k] ?? 0, j * FRAME_MS)) detections.push(j);
    j++;
  }
  return { scores, detections };
}

export interface PositiveOutcome {
  detected: boolean;
  /** Audio time from the end of the keyword to the end of the frame that detected it. */
  latencyMs?: number;
}

/** Whether a positive clip is detected within a second of its keyword's end. */
export async function detectPositive(
  pipeline: WakePipeline,
  clip: Clip,
  rule: TriggerRule,
  k = 0,
): Promise<PositiveOutcome> {
  const { detections } = await detectStream(pipeline, clip.audio, rule, k);
  return positiveOutcome(detections, clip.keywordEnd ?? 0);
}

/** A positive clip's outcome from the frames that detected: the first within -300…1000 ms of the keyword's end
 *  (`keywordEnd`, a sample index) counts. */
export function positiveOutcome(detections: readonly number[], keywordEnd: number): PositiveOutcome {
  for (const j of detections) {
    const latencyMs = (((j + 1) * WAKE_FRAME_SAMPLES - keywordEnd) / RATE) * 1000;
    if (latencyMs >= -300 && latencyMs <= 1000) return { detected: true, latencyMs };
  }
  return { detected: false };
}

/** The frames where `rule` detects over scores kept by detectStream: the same rule at another threshold
 *  without running the model again. */
export function detectionsOf(scores: readonly ArrayLike<number>[], rule: TriggerRule, k = 0): number[] {
  const trigger = new KeywordTrigger(rule);
  const out: number[] = [];
  for (let j = 0; j < scores.length; j++)
    if (j >= SKIP_FRAMES && trigger.push(scores[j]![k] ?? 0, j * FRAME_MS)) out.push(j);
  return out;
}
