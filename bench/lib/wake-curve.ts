// A keyword's operating curve (issue 45): every trigger rule of a grid (threshold × frames) on the frames
// bench/wake already scored, so a user tuning a wake word sees what each rule would give before changing it on
// the Voice page: false accepts an hour on the held-out real audio, false rejects on real speakers and on
// held-out synthetic voices, and the synthetic false accepts. The scores are kept once per frame while the
// benchmark streams (capturingModel); each rule is then a pass of the board's own KeywordTrigger over them.
import type { WakeTensorModel } from '../../agent/workloads/wake/stream.js';
import { KeywordTrigger, type TriggerRule } from '../../engine/src/wake-trigger.js';
import { FRAME_MS } from '../../engine/tools/wake-keyword/features.js';
import {
  RULE_TARGETS,
  ruleOutcome,
  type ScoredValidation,
} from '../../engine/tools/wake-keyword/rule-choice.js';
import { bar, fmt } from './stats.js';

export const CURVE_THRESHOLDS = [
  0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998,
];
export const CURVE_FRAMES = [1, 2, 3, 4];
/** The stream's first frames never detect (the warm-up the board's WakeStream and features.ts share). */
const SKIP_FRAMES = 12;

/** Per-frame scores of one keyword, appended as frames come (a growable Float32Array). */
export class ScoreTrace {
  #data = new Float32Array(1 << 16);
  #n = 0;
  push(score: number): void {
    if (this.#n === this.#data.length) {
      const next = new Float32Array(this.#data.length * 2);
      next.set(this.#data);
      this.#data = next;
    }
    this.#data[this.#n++] = score;
  }
  get scores(): Float32Array {
    return this.#data.subarray(0, this.#n);
  }
}

/** `model`, with every step's score of each keyword index also appended to `traces[index]`. */
export function capturingModel(model: WakeTensorModel, traces: readonly ScoreTrace[]): WakeTensorModel {
  return {
    forward: async (inputs) => {
      const out = await model.forward(inputs);
      const s = out.find((o) => o.name === 'scores')!.data as Float32Array;
      for (const [k, t] of traces.entries()) t.push(s[k] ?? 0);
      return out;
    },
  };
}

/** Detections of `rule` over one stream's scores, with the board's trigger (stream time from frame 0). */
export function countDetections(scores: Float32Array, rule: TriggerRule): number {
  const trigger = new KeywordTrigger(rule);
  let n = 0;
  for (let j = SKIP_FRAMES; j < scores.length; j++) if (trigger.push(scores[j]!, j * FRAME_MS)) n++;
  return n;
}

/** What one keyword's frames were scored on; a set that was not scored is left out. */
export interface CurveSets {
  /** Held-out synthetic voices saying the phrase (a detection counts within -300…1000 ms of its end). */
  synthetic?: ScoredValidation;
  /** Real speakers' clips, each its own stream: a detection anywhere in it counts, as bench/lib/wake-real.ts. */
  realPositives?: Float32Array[];
  /** The held-out real background as one stream, and its hours. */
  realNegatives?: { scores: Float32Array; hours: number };
}

export interface CurvePoint {
  rule: TriggerRule;
  realFalseAcceptsPerHour?: number;
  realFalseAccepts?: number;
  realFalseRejectRate?: number;
  syntheticFalseRejectRate?: number;
  syntheticFalseAcceptsPerHour?: number;
  medianLatencyMs?: number | null;
}

export function operatingCurve(
  sets: CurveSets,
  refractoryMs: number,
  thresholds = CURVE_THRESHOLDS,
  frames = CURVE_FRAMES,
): CurvePoint[] {
  const points: CurvePoint[] = [];
  for (const triggerFrames of frames)
    for (const threshold of thresholds) {
      const rule = { threshold, triggerFrames, refractoryMs };
      const p: CurvePoint = { rule };
      if (sets.realNegatives) {
        p.realFalseAccepts = countDetections(sets.realNegatives.scores, rule);
        p.realFalseAcceptsPerHour = p.realFalseAccepts / sets.realNegatives.hours;
      }
      if (sets.realPositives && sets.realPositives.length > 0)
        p.realFalseRejectRate =
          sets.realPositives.filter((s) => countDetections(s, rule) === 0).length / sets.realPositives.length;
      if (sets.synthetic) {
        const o = ruleOutcome(sets.synthetic, rule);
        p.syntheticFalseRejectRate = o.falseRejectRate;
        p.syntheticFalseAcceptsPerHour = o.falseAcceptsPerHour;
        p.medianLatencyMs = o.medianLatencyMs;
      }
      points.push(p);
    }
  return points;
}

/** The largest false-reject rate of a point over the sets it has (real speakers and synthetic voices). */
export function worstFalseRejects(p: CurvePoint): number {
  return Math.max(p.realFalseRejectRate ?? 0, p.syntheticFalseRejectRate ?? 0);
}

/**
 * The best rule for a user: among those that miss at most `maxFalseRejects` on every set of positives and answer
 * within the latency target, the fewest real false accepts (then the fewest misses, then the lower threshold and
 * fewer frames). Undefined when no rule misses that little.
 */
export function bestPoint(
  points: readonly CurvePoint[],
  maxFalseRejects: number = RULE_TARGETS.falseRejectRate,
) {
  const ok = points.filter(
    (p) =>
      worstFalseRejects(p) <= maxFalseRejects + 1e-9 && (p.medianLatencyMs ?? 0) <= RULE_TARGETS.latencyMs,
  );
  return ok.sort(
    (a, b) =>
      (a.realFalseAcceptsPerHour ?? a.syntheticFalseAcceptsPerHour ?? 0) -
        (b.realFalseAcceptsPerHour ?? b.syntheticFalseAcceptsPerHour ?? 0) ||
      worstFalseRejects(a) - worstFalseRejects(b) ||
      a.rule.threshold - b.rule.threshold ||
      a.rule.triggerFrames - b.rule.triggerFrames,
  )[0];
}

/** The points no other point beats on both the worst false-reject rate and the real false accepts. */
export function paretoFront(points: readonly CurvePoint[]): CurvePoint[] {
  const fa = (p: CurvePoint) => p.realFalseAcceptsPerHour ?? p.syntheticFalseAcceptsPerHour ?? 0;
  const sorted = [...points].sort(
    (a, b) =>
      worstFalseRejects(a) - worstFalseRejects(b) || fa(a) - fa(b) || a.rule.threshold - b.rule.threshold,
  );
  const front: CurvePoint[] = [];
  for (const p of sorted) if (front.length === 0 || fa(p) < fa(front[front.length - 1]!)) front.push(p);
  return front;
}

const pct = (x: number | undefined) => (x === undefined ? '   –  ' : `${fmt(x * 100, 1).padStart(5)} %`);
const perH = (x: number | undefined) => (x === undefined ? '    –  ' : `${fmt(x, 2).padStart(6)}/h`);

/**
 * Prints the curve: per frame count a table of thresholds (false rejects real and synthetic, false accepts real
 * and synthetic, latency) with the real false accepts as a bar; then the trade-off front as a chart of bars
 * (misses on the left, false accepts on the right) and the best rule within the false-reject target.
 */
export function printCurve(name: string, points: readonly CurvePoint[], log: (line: string) => void): void {
  log(
    `operating curve, ${name}: FR real / FR synthetic / FA real / FA synthetic / latency (median, synthetic)`,
  );
  for (const frames of new Set(points.map((p) => p.rule.triggerFrames))) {
    log(`  ${frames} frame(s):`);
    for (const p of points.filter((q) => q.rule.triggerFrames === frames)) {
      const lat =
        p.medianLatencyMs === undefined || p.medianLatencyMs === null ? '  – ' : fmt(p.medianLatencyMs, 0);
      log(
        `    ${fmt(p.rule.threshold, 3).padStart(5)}  ${pct(p.realFalseRejectRate)}  ${pct(p.syntheticFalseRejectRate)}  ` +
          `${perH(p.realFalseAcceptsPerHour)}  ${perH(p.syntheticFalseAcceptsPerHour)}  ${lat.padStart(4)} ms  ` +
          bar('', Math.min(p.realFalseAcceptsPerHour ?? 0, 10), 10, '', 20).trim(),
      );
    }
  }
  log(
    `  trade-off (no other rule misses fewer AND wakes less), ${name}: worst false rejects | false accepts an hour`,
  );
  for (const p of paretoFront(points))
    log(
      `    ${fmt(p.rule.threshold, 3).padStart(5)} × ${p.rule.triggerFrames}  ` +
        `${bar('', worstFalseRejects(p) * 100, 50, '', 20)
          .trim()
          .padStart(20)} ${pct(worstFalseRejects(p))} | ` +
        `${bar('', Math.min(p.realFalseAcceptsPerHour ?? p.syntheticFalseAcceptsPerHour ?? 0, 10), 10, '', 20)
          .trim()
          .padEnd(20)} ${perH(p.realFalseAcceptsPerHour ?? p.syntheticFalseAcceptsPerHour)}`,
    );
  const best = bestPoint(points);
  log(
    best
      ? `  best rule within ${RULE_TARGETS.falseRejectRate * 100} % false rejects, ${name}: ${best.rule.threshold} over ${best.rule.triggerFrames} frame(s): ` +
          `real FA ${perH(best.realFalseAcceptsPerHour).trim()}, FR real ${pct(best.realFalseRejectRate).trim()}, synthetic ${pct(best.syntheticFalseRejectRate).trim()}`
      : `  no rule of the grid misses at most ${RULE_TARGETS.falseRejectRate * 100} % of every set of positives, ${name}`,
  );
}
