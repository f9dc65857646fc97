// The operating curve bench/wake prints (bench/lib/wake-curve.ts): the same detections as the tools' rule
// outcome, and the best rule the one a user tuning a wake word would pick.
import test from 'ava';
import {
  bestPoint,
  type CurvePoint,
  capturingModel,
  countDetections,
  operatingCurve,
  paretoFront,
  ScoreTrace,
} from '../../bench/lib/wake-curve.js';
import { detectionsOf } from '../../engine/tools/wake-keyword/features.js';

const startUp = Array<number>(12).fill(0);

test('countDetections counts what detectionsOf finds (warm-up, frames, refractory)', (t) => {
  const calm = Array<number>(40).fill(0.1);
  // 0.9 inside the warm-up never counts; three runs of high scores, two within a refractory period of each other.
  const flat = Float32Array.from([
    0.9,
    0.9,
    ...startUp.slice(2),
    ...calm,
    0.8,
    0.8,
    0.8,
    0.2,
    0.8,
    0.8,
    0.8,
    ...calm,
    0.95,
    0.95,
  ]);
  const perFrame = [...flat].map((x) => Float32Array.of(x));
  for (const rule of [
    { threshold: 0.7, triggerFrames: 1, refractoryMs: 2000 },
    { threshold: 0.7, triggerFrames: 3, refractoryMs: 0 },
    { threshold: 0.9, triggerFrames: 2, refractoryMs: 2000 },
    { threshold: 0.99, triggerFrames: 1, refractoryMs: 2000 },
  ])
    t.is(countDetections(flat, rule), detectionsOf(perFrame, rule).length, JSON.stringify(rule));
});

test('the curve: real clips count a detection anywhere, negatives an hour; the best rule misses ≤ 5 %', (t) => {
  const clip = (peak: number) => Float32Array.from([...startUp, 0.1, peak, peak, peak, 0.1]);
  // 20 real clips: 19 at 0.96, one at 0.75. An hour of negatives: one frame at 0.92, three at 0.85.
  const realPositives = [...Array.from({ length: 19 }, () => clip(0.96)), clip(0.75)];
  const scores = Float32Array.from([
    ...startUp,
    ...Array(50).fill(0.1),
    0.92,
    ...Array(50).fill(0.1),
    0.85,
    0.85,
    0.85,
    0.1,
  ]);
  const points = operatingCurve(
    { realPositives, realNegatives: { scores, hours: 1 } },
    2000,
    [0.7, 0.8, 0.9, 0.97],
    [1, 3],
  );
  const at = (threshold: number, frames: number) =>
    points.find((p) => p.rule.threshold === threshold && p.rule.triggerFrames === frames)!;
  t.is(at(0.7, 1).realFalseAccepts, 2);
  t.is(at(0.7, 1).realFalseRejectRate, 0);
  t.is(at(0.8, 1).realFalseRejectRate, 0.05);
  t.is(at(0.9, 3).realFalseAccepts, 0);
  t.is(at(0.97, 1).realFalseRejectRate, 1);
  // Within 5 %: 0.9 over 3 frames (no false accept, one clip missed) wins over 0.7 (two false accepts, none missed).
  const best = bestPoint(points)!;
  t.deepEqual([best.rule.threshold, best.rule.triggerFrames], [0.9, 3]);
  t.is(bestPoint(points, 0)?.rule.threshold, 0.7);
  // The front: no point on it is beaten on both figures by another.
  const front = paretoFront(points);
  const fa = (p: CurvePoint) => p.realFalseAcceptsPerHour!;
  const fr = (p: CurvePoint) => p.realFalseRejectRate!;
  for (const p of front) t.false(points.some((q) => fa(q) < fa(p) && fr(q) < fr(p)));
});

test('capturingModel keeps each keyword index its own trace and answers what the model answers', async (t) => {
  let step = 0;
  const model = {
    forward: async () => {
      step++;
      return [
        {
          name: 'scores',
          data: Float32Array.of(step / 10, 1 - step / 10),
          shape: [2],
          type: 'float32' as const,
        },
      ];
    },
  };
  const traces = [new ScoreTrace(), new ScoreTrace()];
  const captured = capturingModel(model, traces);
  for (let i = 0; i < 3; i++) await captured.forward([]);
  t.deepEqual(
    [...traces[0]!.scores].map((x) => x.toFixed(1)),
    ['0.1', '0.2', '0.3'],
  );
  t.deepEqual(
    [...traces[1]!.scores].map((x) => x.toFixed(1)),
    ['0.9', '0.8', '0.7'],
  );
});
