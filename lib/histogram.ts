// A fixed-bucket histogram (Prometheus' cumulative `le` buckets): observing is a few comparisons and adds, and
// nothing is computed until someone reads it, so counting costs an idle agent nothing.

export class Histogram {
  readonly bounds: readonly number[];
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = [...bounds].sort((a, b) => a - b);
    this.#counts = new Array<number>(this.bounds.length).fill(0);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    this.#sum += value;
    this.#count++;
    const i = this.bounds.findIndex((b) => value <= b);
    if (i >= 0) this.#counts[i]!++;
  }

  /** Cumulative counts per bound (`le`), then the total for `+Inf`. */
  snapshot(): { buckets: Array<[number, number]>; sum: number; count: number } {
    let acc = 0;
    const buckets = this.bounds.map((b, i): [number, number] => {
      acc += this.#counts[i]!;
      return [b, acc];
    });
    return { buckets, sum: this.#sum, count: this.#count };
  }
}
