// Download rate over a sliding window of recent samples: steadier than the last chunk, quicker to follow a change
// than the average since the start. The CLI's progress bar and the dashboard's pull list both read it.

export class RateMeter {
  readonly #samples: { t: number; done: number }[] = [];
  constructor(readonly windowMs = 5000) {}
  /** Adds a sample (t in ms, done in bytes); the rate in bytes/s, or undefined until 0.2 s have been seen. */
  add(t: number, done: number): number | undefined {
    // Progress that went back (a server that ignored Range restarted a file) restarts the window.
    if (this.#samples.length > 0 && done < this.#samples.at(-1)!.done) this.#samples.length = 0;
    this.#samples.push({ t, done });
    while (this.#samples.length > 2 && t - this.#samples[0]!.t > this.windowMs) this.#samples.shift();
    const first = this.#samples[0]!;
    const dt = (t - first.t) / 1000;
    return dt >= 0.2 ? (done - first.done) / dt : undefined;
  }
}
