import {
  WAKE_FRAME_MS,
  type WakeDetection,
  type WakeFrame,
  type WakeKeyword,
} from '../voice/wake-protocol.js';
import { frameScheduler, prepareCanvas } from './canvas.js';
import { PALETTE } from './chart.js';

// The wake word's scores as a person tunes it: one line per keyword over the last 30 s of scored audio (x is the
// frame, 80 ms each, so a quiet board does not stretch the chart), its threshold as a dashed line in the same
// colour, and a mark where a detection was made. Scores are 0…1, so the axis is fixed. The geometry is a pure
// function (wakePlot) so it is tested without a browser; the class only keeps the data and paints it.

/** 30 s of one stream. */
export const WAKE_WINDOW_FRAMES = 375;

export interface PlotBox {
  width: number;
  height: number;
}

export interface WakePlot {
  lines: Array<{ keyword: string; color: string; points: Array<[number, number]> }>;
  thresholds: Array<{ keyword: string; color: string; value: number; y: number }>;
  marks: Array<{ keyword: string; color: string; x: number; y: number; score: number }>;
  /** Left and right ends of the plot area, for the axis labels. */
  left: number;
  right: number;
  /** Height of the plot area's bottom edge. */
  bottom: number;
  /** y of a score, for the grid. */
  yOf(score: number): number;
}

export const PAD = { left: 36, right: 8, top: 8, bottom: 18 };

export function keywordColor(keywords: readonly WakeKeyword[], name: string): string {
  const i = keywords.findIndex((k) => k.name === name);
  return PALETTE[(i < 0 ? keywords.length : i) % PALETTE.length]!;
}

/** Where everything goes in a box of this size: the newest frame at the right edge, older ones to its left. */
export function wakePlot(
  frames: readonly WakeFrame[],
  detections: readonly WakeDetection[],
  keywords: readonly WakeKeyword[],
  box: PlotBox,
): WakePlot {
  const left = PAD.left;
  const right = box.width - PAD.right;
  const top = PAD.top;
  const bottom = box.height - PAD.bottom;
  const last = frames.length > 0 ? frames[frames.length - 1]!.seq : 0;
  const first = last - WAKE_WINDOW_FRAMES + 1;
  const xOf = (seq: number) => left + ((seq - first) / (WAKE_WINDOW_FRAMES - 1)) * (right - left);
  const yOf = (score: number) => bottom - Math.min(1, Math.max(0, score)) * (bottom - top);
  const shown = frames.filter((f) => f.seq >= first);
  const lines = keywords.map((k) => ({
    keyword: k.name,
    color: keywordColor(keywords, k.name),
    points: shown
      .filter((f) => typeof f.scores[k.name] === 'number')
      .map((f): [number, number] => [xOf(f.seq), yOf(f.scores[k.name]!)]),
  }));
  const thresholds = keywords.map((k) => ({
    keyword: k.name,
    color: keywordColor(keywords, k.name),
    value: k.threshold,
    y: yOf(k.threshold),
  }));
  const marks = detections
    .filter((d) => d.seq >= first && d.seq <= last)
    .map((d) => ({
      keyword: d.keyword,
      color: keywordColor(keywords, d.keyword),
      x: xOf(d.seq),
      y: yOf(d.score),
      score: d.score,
    }));
  return { lines, thresholds, marks, left, right, bottom, yOf };
}

export class WakeChart {
  readonly element: HTMLElement;
  readonly #canvas: HTMLCanvasElement;
  readonly #legend: HTMLElement;
  readonly #empty: HTMLElement;
  #frames: WakeFrame[] = [];
  #detections: WakeDetection[] = [];
  #keywords: WakeKeyword[] = [];
  readonly #schedule = frameScheduler(() => this.draw());

  constructor() {
    this.#canvas = document.createElement('canvas');
    this.#canvas.className = 'chart';
    this.#canvas.setAttribute('role', 'img');
    this.#canvas.setAttribute('aria-label', 'Wake word scores');
    this.#legend = document.createElement('div');
    this.#legend.className = 'legend';
    this.#empty = document.createElement('p');
    this.#empty.className = 'chart-empty';
    this.#empty.textContent = 'Waiting for scores…';
    const caption = document.createElement('figcaption');
    caption.textContent = 'Wake word scores, last 30 s of audio (dashed: threshold; marks: detections)';
    const plot = document.createElement('div');
    plot.className = 'plot';
    plot.append(this.#canvas, this.#empty);
    this.element = document.createElement('figure');
    this.element.className = 'chart-box';
    this.element.setAttribute('data-testid', 'wake-chart');
    this.element.append(caption, plot, this.#legend);
  }

  set emptyText(text: string) {
    this.#empty.textContent = text;
  }

  setKeywords(keywords: WakeKeyword[]): void {
    this.#keywords = keywords;
    this.#legend.replaceChildren(
      ...keywords.map((k) => {
        const item = document.createElement('span');
        item.style.setProperty('--swatch', keywordColor(keywords, k.name));
        item.textContent = `${k.phrase ?? k.name} (threshold ${k.threshold.toFixed(2)}${k.enabled ? '' : ', off'})`;
        return item;
      }),
    );
    this.#schedule();
  }

  addFrames(frames: readonly WakeFrame[]): void {
    this.#frames.push(...frames);
    if (this.#frames.length > WAKE_WINDOW_FRAMES)
      this.#frames.splice(0, this.#frames.length - WAKE_WINDOW_FRAMES);
    this.#schedule();
  }

  addDetections(detections: readonly WakeDetection[]): void {
    this.#detections.push(...detections);
    const first = (this.#frames[0]?.seq ?? 0) - WAKE_WINDOW_FRAMES;
    this.#detections = this.#detections.filter((d) => d.seq >= first).slice(-100);
    this.#schedule();
  }

  draw(): void {
    const prepared = prepareCanvas(this.#canvas);
    if (!prepared) return;
    const { ctx, width, height } = prepared;
    const plot = wakePlot(this.#frames, this.#detections, this.#keywords, { width, height });
    this.#empty.hidden = this.#frames.length > 0;
    paint(ctx, plot, height);
    // What was painted, for people reading the DOM and for the tests (a canvas has no DOM of its own).
    this.element.dataset['frames'] = String(plot.lines[0]?.points.length ?? 0);
    this.element.dataset['detections'] = String(plot.marks.length);
    this.element.dataset['thresholds'] = plot.thresholds.map((t) => `${t.keyword}=${t.value}`).join(' ');
  }
}

function paint(ctx: CanvasRenderingContext2D, plot: WakePlot, height: number): void {
  ctx.font = '11px system-ui, sans-serif';
  ctx.lineWidth = 1;
  ctx.strokeStyle = '#dde';
  ctx.fillStyle = '#667';
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    const y = Math.round(plot.yOf(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(plot.left, y);
    ctx.lineTo(plot.right, y);
    ctx.stroke();
    ctx.fillText(v.toFixed(2), 2, y + 4);
  }
  ctx.fillText(`-${((WAKE_WINDOW_FRAMES * WAKE_FRAME_MS) / 1000).toFixed(0)} s`, plot.left, height - 4);
  ctx.fillText('now', plot.right - 22, height - 4);
  ctx.setLineDash([5, 4]);
  for (const t of plot.thresholds) {
    ctx.strokeStyle = t.color;
    ctx.beginPath();
    ctx.moveTo(plot.left, t.y);
    ctx.lineTo(plot.right, t.y);
    ctx.stroke();
  }
  ctx.setLineDash([]);
  ctx.lineWidth = 1.6;
  for (const line of plot.lines) {
    ctx.strokeStyle = line.color;
    ctx.beginPath();
    for (const [i, [x, y]] of line.points.entries()) {
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    }
    ctx.stroke();
  }
  ctx.lineWidth = 1;
  for (const m of plot.marks) {
    ctx.strokeStyle = m.color;
    ctx.fillStyle = m.color;
    ctx.beginPath();
    ctx.moveTo(m.x, 8);
    ctx.lineTo(m.x, plot.bottom);
    ctx.stroke();
    ctx.beginPath();
    ctx.arc(m.x, m.y, 4, 0, 2 * Math.PI);
    ctx.fill();
  }
}
