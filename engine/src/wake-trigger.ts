// When a keyword's scores make a detection: N consecutive frames at or over the threshold, then nothing for the
// refractory period (one spoken wake word gives several high frames; a detection per frame would wake the loop
// several times). Pure arithmetic over the score stream, shared by the voice loop, the Wyoming wake role, the
// keyword generator's evaluation and the benchmark, so all of them count detections the same way.

export interface TriggerRule {
  /** Score in [0, 1] a frame must reach. */
  threshold: number;
  /** Consecutive frames at or over the threshold that make a detection. */
  triggerFrames: number;
  /** After a detection, frames in this many milliseconds cannot make another. */
  refractoryMs: number;
}

export const defaultTriggerRule: TriggerRule = { threshold: 0.5, triggerFrames: 1, refractoryMs: 2000 };

export class KeywordTrigger {
  rule: TriggerRule;
  #run = 0;
  #lastMs = Number.NEGATIVE_INFINITY;

  constructor(rule: TriggerRule) {
    this.rule = rule;
  }

  /** Feeds one frame's score at stream time `atMs`; true when this frame makes a detection. */
  push(score: number, atMs: number): boolean {
    if (atMs - this.#lastMs < this.rule.refractoryMs) {
      this.#run = 0;
      return false;
    }
    this.#run = score >= this.rule.threshold ? this.#run + 1 : 0;
    if (this.#run < this.rule.triggerFrames) return false;
    this.#run = 0;
    this.#lastMs = atMs;
    return true;
  }

  reset(): void {
    this.#run = 0;
    this.#lastMs = Number.NEGATIVE_INFINITY;
  }
}
