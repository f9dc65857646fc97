// Test doubles for the wake word: a "model" that scores each 80 ms frame by its loudness (a loud frame is the
// keyword), speaking the real pipeline's tensor protocol (audio + three state tensors in, scores + state out).
// Unit tests only.
import type { GatedSession } from '../../agent/workloads/wake/gate.js';
import type { KeywordSetting, WakeTensorModel } from '../../agent/workloads/wake/stream.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';

export interface FakeWakeModel extends WakeTensorModel {
  calls: number;
  /** Set to make every forward fail (the host died). */
  failWith: Error | undefined;
  /** Lengths of the state tensors each call received (empty = a fresh stream). */
  stateLengths: number[];
}

/** Scores: keyword k is the peak of frame k-th channel… simply: score = min(1, peak * 2) for keyword 0, and
 *  half of that for keyword 1, so one threshold can tell them apart. */
export function fakeWakeModel(): FakeWakeModel {
  const m: FakeWakeModel = {
    calls: 0,
    failWith: undefined,
    stateLengths: [],
    async forward(inputs) {
      m.calls++;
      if (m.failWith) throw m.failWith;
      const [audio, tail] = inputs;
      m.stateLengths.push(tail!.data.length);
      let peak = 0;
      for (const v of audio!.data) peak = Math.max(peak, Math.abs(v));
      const s = Math.min(1, peak * 2);
      return [
        { name: 'scores', data: Float32Array.of(s, s / 2), shape: [2] },
        { name: 'tail', data: new Float32Array(480), shape: [480] },
        { name: 'mel', data: new Float32Array(76 * 32), shape: [76, 32] },
        { name: 'embeddings', data: new Float32Array(16 * 96), shape: [16, 96] },
      ];
    },
  };
  return m;
}

export const FAKE_KEYWORDS: KeywordSetting[] = [
  { name: 'hey_edge', index: 0, threshold: 0.5, triggerFrames: 1, refractoryMs: 1000 },
  { name: 'hey_other', index: 1, threshold: 0.5, triggerFrames: 1, refractoryMs: 1000 },
];

/** `ms` of 16 kHz audio at a constant level. */
export function tone(ms: number, level: number): Float32Array {
  const n = Math.round((ms / 1000) * 16000);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = level * Math.sin((2 * Math.PI * 440 * i) / 16000);
  return out;
}

export function join(...parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

type SessionEvents = {
  'speech-start': { atMs: number };
  'speech-discarded': { reason: string };
  'speech-end': { turn: number };
  'turn-end': { turn: number };
};

/** A voice session as the gate sees it: records what reaches it; the test emits its VAD events. */
export class FakeSession extends TypedEventEmitter<SessionEvents> implements GatedSession {
  readonly pushed: Float32Array[] = [];
  discards = 0;
  pushAudio(samples: Float32Array): boolean {
    this.pushed.push(samples.slice());
    return true;
  }
  async drained(): Promise<void> {}
  async discardInput(): Promise<void> {
    this.discards++;
  }
  get samples(): Float32Array {
    return join(...this.pushed);
  }
}
