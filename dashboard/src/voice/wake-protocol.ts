// The wake word's messages as the Voice page uses them (agent side: agent/workloads/wake/routes.ts and
// monitor.ts). `GET /api/voice/wake` says whether a wake model serves; the socket it names sends `hello` (the
// keywords with their rules, the recent frames and detections), then `frame`, `detection` and `keywords`.

export interface WakeKeyword {
  name: string;
  phrase?: string;
  threshold: number;
  triggerFrames: number;
  refractoryMs: number;
  enabled: boolean;
}

export interface WakeFrame {
  /** Frames scored since the agent started: the chart's x axis (80 ms of audio each). */
  seq: number;
  t: number;
  source: string;
  scores: Record<string, number>;
}

export interface WakeDetection {
  seq: number;
  t: number;
  source: string;
  keyword: string;
  score: number;
}

export type WakeStatus =
  | { available: true; keywords: WakeKeyword[]; livePath: string }
  | { available: false; reason: string };

export type WakeServerEvent =
  | {
      type: 'hello';
      keywords: WakeKeyword[];
      frames: WakeFrame[];
      detections: WakeDetection[];
      unavailable?: string;
    }
  | ({ type: 'frame' } & WakeFrame)
  | ({ type: 'detection' } & WakeDetection)
  | { type: 'keywords'; keywords: WakeKeyword[] }
  /** The saved detection clips changed: read the list again. */
  | { type: 'clips' };

export const WAKE_FRAME_MS = 80;

export function parseWakeEvent(text: string): WakeServerEvent | undefined {
  try {
    const v = JSON.parse(text) as { type?: unknown };
    return typeof v === 'object' && v !== null && typeof v.type === 'string'
      ? (v as WakeServerEvent)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The merge patch that sets one keyword's threshold (voice.wake.keywords.<name>.threshold). */
export function thresholdPatch(name: string, threshold: number): Record<string, unknown> {
  return { voice: { wake: { keywords: { [name]: { threshold } } } } };
}

export type ClipLabel = 'false-trigger' | 'correct';

export interface WakeClipView {
  id: string;
  t: number;
  keyword: string;
  score: number;
  source: string;
  bytes: number;
  durationMs: number;
  label?: ClipLabel;
}

/** `GET /api/voice/wake/clips`. */
export type WakeClipList =
  | { enabled: false; reason: string; clips: [] }
  | {
      enabled: true;
      maxCount: number;
      maxBytes: number;
      bytes: number;
      lastError?: string;
      clips: WakeClipView[];
    };

/** The highest threshold the configuration takes (voice.wake.keywords.<name>.threshold). */
export const MAX_THRESHOLD = 0.99;

/** Per keyword, what the marked clips say about its threshold: the highest false trigger, the lowest correct one. */
export function tuningHints(clips: readonly WakeClipView[]): string[] {
  const byKeyword = new Map<string, { falseMax?: number; correctMin?: number }>();
  for (const c of clips) {
    const k = byKeyword.get(c.keyword) ?? {};
    if (c.label === 'false-trigger') k.falseMax = Math.max(k.falseMax ?? 0, c.score);
    if (c.label === 'correct') k.correctMin = Math.min(k.correctMin ?? 1, c.score);
    byKeyword.set(c.keyword, k);
  }
  return [...byKeyword].flatMap(([keyword, k]) => {
    if (k.falseMax === undefined && k.correctMin === undefined) return [];
    const parts = [
      k.falseMax === undefined
        ? undefined
        : k.falseMax >= MAX_THRESHOLD
          ? `false triggers scored up to ${k.falseMax.toFixed(2)}, above any threshold allowed (${MAX_THRESHOLD})`
          : `false triggers scored up to ${k.falseMax.toFixed(2)}, so a threshold above that would have ignored them`,
      k.correctMin !== undefined ? `correct detections scored from ${k.correctMin.toFixed(2)}` : undefined,
    ].filter((p) => p !== undefined);
    const clash =
      k.falseMax !== undefined && k.correctMin !== undefined && k.falseMax >= k.correctMin
        ? ' (they overlap: no threshold separates them; more training or another phrase would)'
        : '';
    return [`${keyword}: ${parts.join('; ')}${clash}.`];
  });
}
