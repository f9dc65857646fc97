// Shared arithmetic for benchmarks: medians with spread, and a text bar chart so a ratio can be seen at a glance.
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export interface Summary {
  median: number;
  min: number;
  max: number;
  p10: number;
  p90: number;
  n: number;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** "load 2.4 3.1 3.3": the 1-, 5- and 15-minute load averages, printed beside figures taken on a shared machine. */
export function loadLine(): string {
  return `load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
}

export function summarize(samples: number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(s, 0.5),
    min: s[0] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
    p10: quantile(s, 0.1),
    p90: quantile(s, 0.9),
    n: s.length,
  };
}

export function fmt(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}

export function describe(s: Summary, unit: string, digits = 2): string {
  return `${fmt(s.median, digits)} ${unit} (min ${fmt(s.min, digits)}, max ${fmt(s.max, digits)}, n=${s.n})`;
}

/** One row of a horizontal bar chart: `label  ████████▌     1.23x`. */
export function bar(label: string, value: number, scaleMax: number, suffix: string, width = 40): string {
  const cells = scaleMax > 0 ? Math.max(0, Math.min(width, (value / scaleMax) * width)) : 0;
  const full = Math.floor(cells);
  const half = cells - full >= 0.5 ? '▌' : '';
  return `${label.padEnd(28)} ${'█'.repeat(full)}${half}${' '.repeat(width - full - half.length)} ${suffix}`;
}

export function verdict(ok: boolean): string {
  return ok ? 'PASS' : 'MISS';
}

/** One benchmark figure against its target, as `npm run bench` collects them for its closing table. */
export interface Figure {
  bench: string;
  figure: string;
  value: number;
  unit: string;
  target: string;
  pass: boolean;
}

/** Where the runner collects figures (one JSON line each); unset when a benchmark runs on its own. */
export const RESULTS_ENV = 'MNN_EDGE_BENCH_RESULTS';

function benchName(): string {
  const script = process.argv[1] ?? '';
  return /([^/]+)\.bench\.[tj]s$/.exec(script)?.[1] ?? script;
}

/**
 * Records a figure for the runner's table and returns its PASS/MISS word, so a benchmark prints its verdict
 * in its own words and the table gets the same number.
 */
export function check(figure: string, value: number, unit: string, target: string, pass: boolean): string {
  const file = process.env[RESULTS_ENV];
  if (file) {
    const row: Figure = { bench: benchName(), figure, value, unit, target, pass };
    appendFileSync(file, `${JSON.stringify(row)}\n`);
  }
  return verdict(pass);
}
