// What the dashboard's wake chart shows: every frame scored by a wake stream (the board's own loop, Wyoming's
// detect runs), the detections they made and the keywords' current rules. The last frames and detections are
// kept, bounded, so a page opened later still shows the recent past; subscribers get each one as it happens.
//
// The monitor also holds the running streams (weakly: a finished Wyoming run is garbage as soon as its connection
// lets go of it), so a threshold changed in the settings reaches them at once, not at the next stream.
import type { ResolvedKeyword } from './model.js';
import type { WakeFrame, WakeStream } from './stream.js';

export interface WakeKeywordView {
  name: string;
  phrase?: string;
  threshold: number;
  triggerFrames: number;
  refractoryMs: number;
  /** false: scored and charted, never wakes the board. */
  enabled: boolean;
}

export interface WakeScoreFrame {
  /** Frames scored since the agent started, over all streams: the chart's x axis. */
  seq: number;
  /** Wall time (ms since the epoch) when it was scored. */
  t: number;
  /** `board` (the board's own loop) or `wyoming`. */
  source: string;
  scores: Record<string, number>;
}

export interface WakeDetectionView {
  /** The frame that made it. */
  seq: number;
  t: number;
  source: string;
  keyword: string;
  score: number;
}

export type WakeMonitorEvent =
  | { type: 'frame'; frame: WakeScoreFrame }
  | { type: 'detection'; detection: WakeDetectionView }
  | { type: 'keywords'; keywords: WakeKeywordView[] }
  /** The saved clips changed (clips on). */
  | { type: 'clips' };

/** Where detections' audio goes when clips are on (clips.ts). */
export interface ClipSink {
  save(d: WakeDetectionView, audio: Float32Array): unknown;
}

export interface WakeMonitorOptions {
  nowMs: () => number;
  /** voice.wake.clips on: each detection's last 2 s of audio is saved. */
  clips?: ClipSink;
  /** Frames kept for a page opened later: 375 = 30 s of one stream. */
  maxFrames?: number;
  maxDetections?: number;
}

export function keywordView(k: ResolvedKeyword): WakeKeywordView {
  return {
    name: k.name,
    ...(k.phrase !== undefined ? { phrase: k.phrase } : {}),
    threshold: k.threshold,
    triggerFrames: k.triggerFrames,
    refractoryMs: k.refractoryMs,
    enabled: k.enabled,
  };
}

export class WakeMonitor {
  readonly #nowMs: () => number;
  readonly #maxFrames: number;
  readonly #maxDetections: number;
  readonly #clips: ClipSink | undefined;
  readonly #frames: WakeScoreFrame[] = [];
  readonly #detections: WakeDetectionView[] = [];
  readonly #listeners = new Set<(e: WakeMonitorEvent) => void>();
  readonly #streams = new Set<WeakRef<WakeStream>>();
  #keywords: WakeKeywordView[] = [];
  #seq = 0;

  constructor(options: WakeMonitorOptions) {
    this.#nowMs = options.nowMs;
    this.#maxFrames = options.maxFrames ?? 375;
    this.#maxDetections = options.maxDetections ?? 50;
    this.#clips = options.clips;
  }

  /** A new stream: its frames are recorded under `source`; its keywords are the ones now in force. */
  attach(stream: WakeStream, source: string, keywords: readonly ResolvedKeyword[]): void {
    for (const ref of this.#streams) if (ref.deref() === undefined) this.#streams.delete(ref);
    this.#streams.add(new WeakRef(stream));
    stream.onFrame = (frame) => this.#record(source, frame, stream);
    this.#setKeywords(keywords);
  }

  /** A settings change: every running stream takes the new rules now, and the chart its thresholds. */
  applyRules(keywords: readonly ResolvedKeyword[]): void {
    const rules = new Map(keywords.map((k) => [k.name, k]));
    for (const ref of this.#streams) {
      const stream = ref.deref();
      if (stream) stream.updateRules(rules);
      else this.#streams.delete(ref);
    }
    this.#setKeywords(keywords);
  }

  /** The recent past, oldest first, for a page that opens now. */
  snapshot(): { keywords: WakeKeywordView[]; frames: WakeScoreFrame[]; detections: WakeDetectionView[] } {
    return { keywords: this.#keywords, frames: [...this.#frames], detections: [...this.#detections] };
  }

  subscribe(listener: (e: WakeMonitorEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #setKeywords(keywords: readonly ResolvedKeyword[]): void {
    const next = keywords.map(keywordView);
    if (JSON.stringify(next) === JSON.stringify(this.#keywords)) return;
    this.#keywords = next;
    this.#emit({ type: 'keywords', keywords: next });
  }

  #record(source: string, f: WakeFrame, stream: WakeStream): void {
    const frame: WakeScoreFrame = { seq: ++this.#seq, t: this.#nowMs(), source, scores: f.scores };
    push(this.#frames, frame, this.#maxFrames);
    this.#emit({ type: 'frame', frame });
    for (const d of f.detections) {
      const detection = { seq: frame.seq, t: frame.t, source, keyword: d.keyword, score: d.score };
      push(this.#detections, detection, this.#maxDetections);
      this.#emit({ type: 'detection', detection });
      if (this.#clips) {
        this.#clips.save(detection, stream.recentAudio());
        this.#emit({ type: 'clips' });
      }
    }
  }

  #emit(e: WakeMonitorEvent): void {
    // A page's socket failing must not stop the stream that is scoring.
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        // the socket handler reports its own failures
      }
    }
  }
}

function push<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
}
