// Which trigger rule a made keyword ships with: the threshold and frame count are chosen on the generator's own
// validation set (held-out voices, other clips than the benchmark's), from the scores it kept. Raising the
// threshold trades missed wake words for fewer false wakes. A wake word that is missed often, or answered late,
// makes the product unusable whatever else it does, so false rejects are capped (1.6 times their target) and the
// median detection latency held to its target (more frames wait longer); within those, the fewest false accepts
// win. A max-of-ratios cost was tried first: with the false-accept target 100 times
// harder to meet, it shipped 0.95 over 2 frames, which missed a quarter of the held-out wake words.
import type { TriggerRule } from '../../src/wake-trigger.js';
import { detectionsOf, positiveOutcome } from './features.js';

/** The targets the issue sets and openWakeWord publishes: ≤ 5 % false rejects, ≤ 0.5 false accepts an hour;
 *  and detection within 200 ms of the keyword's end (each frame a rule waits for adds 80 ms). */
export const RULE_TARGETS = { falseRejectRate: 0.05, falseAcceptsPerHour: 0.5, latencyMs: 200 } as const;

const THRESHOLDS = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99];
const FRAMES = [1, 2, 3];

export interface RuleOutcome {
  rule: TriggerRule;
  falseRejects: number;
  falseRejectRate: number;
  falseAccepts: number;
  falseAcceptsPerHour: number;
  latenciesMs: number[];
  /** The median of latenciesMs (audio from the keyword's end to the detecting frame); null without detections. */
  medianLatencyMs: number | null;
}

export interface ScoredValidation {
  /** Per positive clip, its per-frame scores and the sample where its keyword ends. */
  positives: Array<{ scores: Float32Array[]; keywordEnd: number }>;
  /** Per-frame scores of the negative audio: one or more streams, each scored from its own start. */
  negatives: Float32Array[][];
  negativeHours: number;
}

export function ruleOutcome(v: ScoredValidation, rule: TriggerRule): RuleOutcome {
  const latenciesMs: number[] = [];
  let falseRejects = 0;
  for (const p of v.positives) {
    const o = positiveOutcome(detectionsOf(p.scores, rule), p.keywordEnd);
    if (o.latencyMs !== undefined) latenciesMs.push(o.latencyMs);
    else falseRejects++;
  }
  const falseAccepts = v.negatives.reduce((n, stream) => n + detectionsOf(stream, rule).length, 0);
  return {
    rule,
    falseRejects,
    falseRejectRate: falseRejects / Math.max(1, v.positives.length),
    falseAccepts,
    falseAcceptsPerHour: falseAccepts / v.negativeHours,
    latenciesMs,
    medianLatencyMs:
      latenciesMs.length === 0 ? null : [...latenciesMs].sort((a, b) => a - b)[latenciesMs.length >> 1]!,
  };
}

/** False rejects a shipped rule may have at most on the validation set: 1.6 times the target (8 %). Recipe 3 had
 *  twice (10 %); recipe 4's head gives fewer false accepts at every false-reject rate (development set, 60 min:
 *  5–9 an hour at 8 % against recipe 3's 7–22 at 10 %), and part of that gain is spent on missing fewer wake
 *  words. */
export const MAX_FALSE_REJECT_RATE = 1.6 * RULE_TARGETS.falseRejectRate;

/**
 * Every candidate rule's outcome, best first: those within the false-reject cap and the latency target before
 * the rest; within them
 * the fewest false accepts, then the fewest false rejects; outside it the fewest false rejects; then the lower
 * threshold and fewer frames.
 */
export function rankRules(v: ScoredValidation, refractoryMs: number): RuleOutcome[] {
  const outcomes = THRESHOLDS.flatMap((threshold) =>
    FRAMES.map((triggerFrames) => ruleOutcome(v, { threshold, triggerFrames, refractoryMs })),
  );
  const capped = (o: RuleOutcome) =>
    o.falseRejectRate <= MAX_FALSE_REJECT_RATE && (o.medianLatencyMs ?? 0) <= RULE_TARGETS.latencyMs ? 0 : 1;
  return outcomes.sort(
    (a, b) =>
      capped(a) - capped(b) ||
      (capped(a) === 0 ? a.falseAccepts - b.falseAccepts : 0) ||
      a.falseRejects - b.falseRejects ||
      a.falseAccepts - b.falseAccepts ||
      a.rule.threshold - b.rule.threshold ||
      a.rule.triggerFrames - b.rule.triggerFrames,
  );
}
