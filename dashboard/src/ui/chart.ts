// A small time-series chart on <canvas>: a sliding window of points per series, redrawn at most once per
// animation frame. Points older than the window are dropped as new ones arrive, so memory stays bounded
// however long the page stays open.

import { frameScheduler, prepareCanvas } from './canvas.js';
export interface ChartOptions {
  unit: string;
  windowMs: number;
  /** Fixed bounds (e.g. 0–100 % for utilisation); otherwise the axis follows the data. */
  yMin?: number;
  yMax?: number;
}

interface Series {
  color: string;
  t: number[];
  v: number[];
}

const MIN_SPAN_MS = 2 * 60_000;
export const PALETTE = [
  '#2f7ed8',
  '#e4572e',
  '#29a35a',
  '#a05bd5',
  '#d4a017',
  '#17a2b8',
  '#c2185b',
  '#6d8b1f',
];

export class LineChart {
  readonly element: HTMLElement;
  readonly #canvas: HTMLCanvasElement;
  readonly #legend: HTMLElement;
  /** Said instead of a blank plot while there are no points: why there are none, when the page knows. */
  readonly #empty: HTMLElement;
  readonly #options: ChartOptions;
  readonly #series = new Map<string, Series>();
  readonly #schedule = frameScheduler(() => this.draw());

  constructor(title: string, options: ChartOptions) {
    this.#options = options;
    this.#canvas = document.createElement('canvas');
    this.#canvas.className = 'chart';
    this.#canvas.setAttribute('role', 'img');
    this.#canvas.setAttribute('aria-label', title);
    this.#legend = document.createElement('div');
    this.#legend.className = 'legend';
    this.element = document.createElement('figure');
    this.element.className = 'chart-box';
    const caption = document.createElement('figcaption');
    caption.textContent = `${title} (${options.unit})`;
    this.#empty = document.createElement('p');
    this.#empty.className = 'chart-empty';
    this.#empty.textContent = 'Waiting for samples…';
    const plot = document.createElement('div');
    plot.className = 'plot';
    plot.append(this.#canvas, this.#empty);
    this.element.append(caption, plot, this.#legend);
  }

  /** Why the chart has no points yet ("Not available on this board", "No model serving"). */
  set emptyText(text: string) {
    this.#empty.textContent = text;
  }

  get seriesNames(): string[] {
    return [...this.#series.keys()];
  }

  #get(name: string): Series {
    let s = this.#series.get(name);
    if (s === undefined) {
      s = { color: PALETTE[this.#series.size % PALETTE.length]!, t: [], v: [] };
      this.#series.set(name, s);
      const item = document.createElement('span');
      item.style.setProperty('--swatch', s.color);
      item.textContent = name;
      this.#legend.append(item);
    }
    return s;
  }

  push(name: string, t: number, v: number): void {
    if (!Number.isFinite(v)) return;
    const s = this.#get(name);
    s.t.push(t);
    s.v.push(v);
    const cutoff = t - this.#options.windowMs;
    let drop = 0;
    while (drop < s.t.length && s.t[drop]! < cutoff) drop++;
    if (drop > 0) {
      s.t.splice(0, drop);
      s.v.splice(0, drop);
    }
    this.#schedule();
  }

  draw(): void {
    const prepared = prepareCanvas(this.#canvas);
    if (!prepared) return;
    const { ctx, width, height } = prepared;

    let tMax = 0;
    let tFirst = Number.POSITIVE_INFINITY;
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (const s of this.#series.values()) {
      if (s.t.length > 0) {
        tMax = Math.max(tMax, s.t[s.t.length - 1]!);
        tFirst = Math.min(tFirst, s.t[0]!);
      }
      for (const v of s.v) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    // Until the window has filled, show what there is (at least two minutes) instead of a sliver at the edge.
    const span = Math.min(this.#options.windowMs, Math.max(MIN_SPAN_MS, tMax - tFirst));
    const pad = { left: 44, right: 8, top: 8, bottom: 18 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#667';
    this.#empty.hidden = tMax !== 0;
    if (tMax === 0) return;
    const yMin = this.#options.yMin ?? (lo === hi ? lo - 1 : lo);
    const yMax = this.#options.yMax ?? (lo === hi ? hi + 1 : hi + (hi - lo) * 0.1);
    const tMin = tMax - span;
    const x = (t: number) => pad.left + ((t - tMin) / span) * plotW;
    const y = (v: number) =>
      pad.top + plotH - ((Math.min(Math.max(v, yMin), yMax) - yMin) / (yMax - yMin)) * plotH;

    ctx.strokeStyle = '#dde';
    ctx.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const v = yMin + ((yMax - yMin) * i) / 4;
      const yy = Math.round(y(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(pad.left, yy);
      ctx.lineTo(width - pad.right, yy);
      ctx.stroke();
      ctx.fillText(formatTick(v, (yMax - yMin) / 4), 2, yy + 4);
    }
    ctx.fillText(`-${Math.round(span / 60000)} min`, pad.left, height - 4);
    ctx.fillText('now', width - pad.right - 22, height - 4);

    ctx.lineWidth = 1.6;
    for (const s of this.#series.values()) {
      if (s.t.length === 0) continue;
      ctx.strokeStyle = s.color;
      ctx.beginPath();
      s.t.forEach((t, i) => {
        const px = x(t);
        const py = y(s.v[i]!);
        if (i === 0) ctx.moveTo(px, py);
        else ctx.lineTo(px, py);
      });
      ctx.stroke();
    }
  }
}

function formatTick(v: number, step: number): string {
  const a = Math.abs(v);
  // Enough decimals that neighbouring ticks differ (35.2 vs 35.4, not 35 vs 35).
  if (a < 1e4 && step < 1) return v.toFixed(Math.min(3, Math.ceil(-Math.log10(step))));
  if (a >= 1e9) return `${(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${(v / 1e3).toFixed(0)}k`;
  return a >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1);
}
