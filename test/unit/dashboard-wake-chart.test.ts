import test from 'ava';
import { PAD, WAKE_WINDOW_FRAMES, wakePlot } from '../../dashboard/src/ui/wake-chart.js';
import {
  thresholdPatch,
  tuningHints,
  type WakeClipView,
  type WakeKeyword,
} from '../../dashboard/src/voice/wake-protocol.js';

// The Voice page's wake chart without a browser: where scores, thresholds and detections are drawn.

const keywords: WakeKeyword[] = [
  { name: 'hey_edge', threshold: 0.5, triggerFrames: 1, refractoryMs: 2000, enabled: true },
  { name: 'hey_other', threshold: 0.8, triggerFrames: 1, refractoryMs: 2000, enabled: false },
];
const box = { width: 400 + PAD.left + PAD.right, height: 100 + PAD.top + PAD.bottom };
const frame = (seq: number, a: number, b: number) => ({
  seq,
  t: seq * 80,
  source: 'board',
  scores: { hey_edge: a, hey_other: b },
});

test('wake chart: newest frame at the right edge, scores on a fixed 0…1 axis, one line per keyword', (t) => {
  const plot = wakePlot([frame(1, 0, 0), frame(2, 0.25, 1), frame(3, 1, 0.5)], [], keywords, box);
  const right = box.width - PAD.right;
  const bottom = box.height - PAD.bottom;
  t.deepEqual(
    plot.lines.map((l) => l.keyword),
    ['hey_edge', 'hey_other'],
  );
  const edge = plot.lines[0]!.points;
  t.is(edge.length, 3);
  t.is(edge[2]![0], right);
  t.is(edge[2]![1], PAD.top, 'a score of 1 at the top');
  t.is(edge[0]![1], bottom, 'a score of 0 at the bottom');
  t.is(edge[1]![1], bottom - 25);
  t.true(edge[1]![0] < edge[2]![0]);
  t.not(plot.lines[0]!.color, plot.lines[1]!.color);
});

test('wake chart: a threshold is a line at its score; detections are marked at their frame, old ones left out', (t) => {
  const frames = Array.from({ length: WAKE_WINDOW_FRAMES + 50 }, (_, i) => frame(i + 1, 0.1, 0.1));
  const plot = wakePlot(
    frames,
    [
      { seq: 10, t: 0, source: 'board', keyword: 'hey_edge', score: 0.9 },
      { seq: WAKE_WINDOW_FRAMES + 50, t: 0, source: 'wyoming', keyword: 'hey_edge', score: 0.6 },
    ],
    keywords,
    box,
  );
  t.is(plot.lines[0]!.points.length, WAKE_WINDOW_FRAMES, 'only the window is drawn');
  t.deepEqual(
    plot.thresholds.map((th) => [th.keyword, th.value, th.y]),
    [
      ['hey_edge', 0.5, PAD.top + 50],
      ['hey_other', 0.8, PAD.top + 20],
    ],
  );
  t.is(plot.marks.length, 1, 'a detection older than the window is not drawn');
  t.like(plot.marks[0], { keyword: 'hey_edge', x: box.width - PAD.right, y: PAD.top + 40, score: 0.6 });
});

test('wake chart: no frames yet is an empty plot, not an error; a threshold change is one key of a merge patch', (t) => {
  const plot = wakePlot([], [], keywords, box);
  t.deepEqual(
    plot.lines.map((l) => l.points.length),
    [0, 0],
  );
  t.deepEqual(thresholdPatch('hey_edge', 0.42), {
    voice: { wake: { keywords: { hey_edge: { threshold: 0.42 } } } },
  });
});

test('clip marks as tuning hints: the highest false trigger, the lowest correct one, and when they overlap', (t) => {
  const clip = (keyword: string, score: number, label?: WakeClipView['label']): WakeClipView => ({
    id: `1-1-${keyword}`,
    t: 0,
    keyword,
    score,
    source: 'board',
    bytes: 64044,
    durationMs: 2000,
    ...(label ? { label } : {}),
  });
  t.deepEqual(
    tuningHints([
      clip('hey_edge', 0.55, 'false-trigger'),
      clip('hey_edge', 0.62, 'false-trigger'),
      clip('hey_edge', 0.9, 'correct'),
      clip('hey_edge', 0.7),
      clip('hey_other', 0.8, 'false-trigger'),
      clip('hey_other', 0.75, 'correct'),
      clip('hey_third', 0.6),
      clip('hey_fourth', 0.995, 'false-trigger'),
    ]),
    [
      'hey_edge: false triggers scored up to 0.62, so a threshold above that would have ignored them; correct detections scored from 0.90.',
      'hey_other: false triggers scored up to 0.80, so a threshold above that would have ignored them; correct detections scored from 0.75 (they overlap: no threshold separates them; more training or another phrase would).',
      'hey_fourth: false triggers scored up to 0.99, above any threshold allowed (0.99).',
    ],
  );
});
