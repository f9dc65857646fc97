// The keyword head: a small dense network over 16 embeddings (1536 values) → one score, trained here with
// weighted binary cross-entropy and Adam. Inputs are standardised with the training set's mean and spread;
// the export folds that into the first layer, so the `.mnn` takes raw embeddings as openWakeWord's heads do.
import type { DenseHead } from './onnx.js';
import { gauss, rng } from './speech.js';

export interface TrainOptions {
  hidden: number;
  epochs: number;
  batch: number;
  learningRate: number;
  /** Lower the learning rate along half a cosine to 0 by the last epoch (true), or keep it (false). */
  cosineDecay: boolean;
  /** L2 penalty on the weights. */
  weightDecay: number;
  /** Loss weight of a negative window relative to a positive one. */
  negativeWeight: number;
  seed: number;
  /** Called after each epoch with its mean loss (progress for a long run). */
  onEpoch?: (epoch: number, loss: number) => void;
}

// Weight decay: with 1e-4 the head learnt the training voices by heart (loss 1e-4 by epoch 6) and fired on unseen
// voices' ordinary speech; 1e-2 cut false accepts at threshold 0.9 from 45 to 21 an hour (recipe 3). Recipe 4
// lowers the learning rate along a cosine: at a constant rate the last Adam steps leave the weights wherever the
// last batches pushed them, and three seeds of recipe 3's head had 7, 11 and 22 false accepts an hour at 10 %
// false rejects on the development set (held-out voices, 60 min); with the decay two seeds had 10 and 11, and the
// penalty could drop to 3e-3 over 32 epochs: 5–7 an hour at 10 % false rejects, 12–18 at 5 % (10–11, 23–26).
export const defaultTrainOptions: TrainOptions = {
  hidden: 32,
  epochs: 32,
  batch: 64,
  learningRate: 1e-3,
  cosineDecay: true,
  weightDecay: 3e-3,
  negativeWeight: 1,
  seed: 7,
};

export interface Head {
  inSize: number;
  hidden: number;
  mean: Float32Array;
  invStd: Float32Array;
  w1: Float32Array;
  b1: Float32Array;
  w2: Float32Array;
  b2: number;
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

function standardise(
  samples: readonly Float32Array[],
  inSize: number,
): { mean: Float32Array; invStd: Float32Array } {
  const mean = new Float64Array(inSize);
  const sq = new Float64Array(inSize);
  for (const x of samples)
    for (let i = 0; i < inSize; i++) {
      mean[i]! += x[i]!;
      sq[i]! += x[i]! * x[i]!;
    }
  const n = Math.max(1, samples.length);
  const m = new Float32Array(inSize);
  const s = new Float32Array(inSize);
  for (let i = 0; i < inSize; i++) {
    m[i] = mean[i]! / n;
    s[i] = 1 / Math.sqrt(Math.max(1e-6, sq[i]! / n - m[i]! * m[i]!));
  }
  return { mean: m, invStd: s };
}

/** Score of one window (raw embeddings). */
export function scoreWindow(h: Head, x: Float32Array, hiddenOut?: Float32Array, zOut?: Float32Array): number {
  const z = zOut ?? new Float32Array(h.inSize);
  for (let i = 0; i < h.inSize; i++) z[i] = (x[i]! - h.mean[i]!) * h.invStd[i]!;
  const a = hiddenOut ?? new Float32Array(h.hidden);
  let logit = h.b2;
  for (let j = 0; j < h.hidden; j++) {
    let s = h.b1[j]!;
    for (let i = 0; i < h.inSize; i++) s += z[i]! * h.w1[i * h.hidden + j]!;
    a[j] = Math.max(s, 0);
    logit += a[j]! * h.w2[j]!;
  }
  return sigmoid(logit);
}

class Adam {
  readonly m: Float32Array;
  readonly v: Float32Array;
  t = 0;
  constructor(n: number) {
    this.m = new Float32Array(n);
    this.v = new Float32Array(n);
  }
  step(p: Float32Array, g: Float32Array, lr: number, t: number): void {
    const b1 = 0.9;
    const b2 = 0.999;
    const c1 = 1 - b1 ** t;
    const c2 = 1 - b2 ** t;
    for (let i = 0; i < p.length; i++) {
      this.m[i] = b1 * this.m[i]! + (1 - b1) * g[i]!;
      this.v[i] = b2 * this.v[i]! + (1 - b2) * g[i]! * g[i]!;
      p[i]! -= (lr * (this.m[i]! / c1)) / (Math.sqrt(this.v[i]! / c2) + 1e-8);
    }
  }
}

export function trainHead(
  positives: readonly Float32Array[],
  negatives: readonly Float32Array[],
  options: Partial<TrainOptions> = {},
): Head {
  const o = { ...defaultTrainOptions, ...options };
  const inSize = positives[0]?.length ?? 0;
  if (inSize === 0 || negatives.length === 0)
    throw new Error('trainHead: needs positive and negative windows');
  const r = rng(o.seed);
  const { mean, invStd } = standardise([...positives, ...negatives], inSize);
  const H = o.hidden;
  const w1 = new Float32Array(inSize * H).map(() => gauss(r) * Math.sqrt(2 / inSize));
  const b1 = new Float32Array(H);
  const w2 = new Float32Array(H).map(() => gauss(r) * Math.sqrt(1 / H));
  const b2 = new Float32Array(1);
  const head: Head = { inSize, hidden: H, mean, invStd, w1, b1, w2, b2: 0 };
  const data: Array<{ x: Float32Array; y: number; w: number }> = [
    ...positives.map((x) => ({ x, y: 1, w: 1 })),
    ...negatives.map((x) => ({ x, y: 0, w: o.negativeWeight })),
  ];
  const opt = { w1: new Adam(w1.length), b1: new Adam(H), w2: new Adam(H), b2: new Adam(1) };
  const g = {
    w1: new Float32Array(w1.length),
    b1: new Float32Array(H),
    w2: new Float32Array(H),
    b2: new Float32Array(1),
  };
  const z = new Float32Array(inSize);
  const a = new Float32Array(H);
  let t = 0;
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    for (let i = data.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [data[i], data[j]] = [data[j]!, data[i]!];
    }
    const lr = o.cosineDecay
      ? o.learningRate * 0.5 * (1 + Math.cos((Math.PI * epoch) / o.epochs))
      : o.learningRate;
    let lossSum = 0;
    let weightSum = 0;
    for (let start = 0; start < data.length; start += o.batch) {
      const batch = data.slice(start, start + o.batch);
      g.w1.fill(0);
      g.b1.fill(0);
      g.w2.fill(0);
      g.b2.fill(0);
      let bw = 0;
      for (const { x, y, w } of batch) {
        head.b2 = b2[0]!;
        const p = scoreWindow(head, x, a, z);
        lossSum -= w * (y === 1 ? Math.log(p + 1e-7) : Math.log(1 - p + 1e-7));
        weightSum += w;
        bw += w;
        const dl = (p - y) * w;
        g.b2[0]! += dl;
        for (let j = 0; j < H; j++) {
          g.w2[j]! += dl * a[j]!;
          if (a[j]! <= 0) continue;
          const dh = dl * w2[j]!;
          g.b1[j]! += dh;
          for (let i = 0; i < inSize; i++) g.w1[i * H + j]! += dh * z[i]!;
        }
      }
      t++;
      const scale = 1 / Math.max(1e-9, bw);
      for (let i = 0; i < w1.length; i++) g.w1[i] = g.w1[i]! * scale + o.weightDecay * w1[i]!;
      for (let j = 0; j < H; j++) {
        g.b1[j]! *= scale;
        g.w2[j] = g.w2[j]! * scale + o.weightDecay * w2[j]!;
      }
      g.b2[0]! *= scale;
      opt.w1.step(w1, g.w1, lr, t);
      opt.b1.step(b1, g.b1, lr, t);
      opt.w2.step(w2, g.w2, lr, t);
      opt.b2.step(b2, g.b2, lr, t);
    }
    head.b2 = b2[0]!;
    o.onEpoch?.(epoch, lossSum / Math.max(1e-9, weightSum));
  }
  head.b2 = b2[0]!;
  return head;
}

/** The head with its standardisation folded into the first layer, for export. */
export function foldHead(h: Head, inputShape: [number, number, number]): DenseHead {
  const w1 = new Float32Array(h.w1.length);
  const b1 = Float32Array.from(h.b1);
  for (let i = 0; i < h.inSize; i++)
    for (let j = 0; j < h.hidden; j++) {
      const w = h.w1[i * h.hidden + j]! * h.invStd[i]!;
      w1[i * h.hidden + j] = w;
      b1[j]! -= w * h.mean[i]!;
    }
  return { inputShape, hidden: h.hidden, w1, b1, w2: Float32Array.from(h.w2), b2: h.b2 };
}
