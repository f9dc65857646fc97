// The openWakeWord pipeline on MnnGraphs (MNN's Express::Module): melspectrogram → embedding → keyword heads,
// one 80 ms frame (1280 samples at 16 kHz) at a time. The pipeline keeps no per-stream state: the caller carries it (the audio tail the
// melspectrogram's window needs, the last 76 mel frames, the last 16 embeddings) and sends it with every frame,
// as the VAD does with Silero's state, so one engine host serves every stream and a restarted host loses nothing
// a stream cannot rebuild.
import { EngineError } from './errors.js';
import { type GraphLoadOptions, type GraphOutput, MnnGraph, type Tensor } from './graph.js';

export const WAKE_SAMPLE_RATE = 16000;
/** New samples per step: 80 ms. */
export const WAKE_FRAME_SAMPLES = 1280;
/** Samples of the previous frame the melspectrogram needs again (its 512-sample FFT window at a 160 hop). */
export const WAKE_TAIL_SAMPLES = 480;
export const MEL_BINS = 32;
/** Mel frames one embedding looks at. */
export const MEL_WINDOW = 76;
/** Mel frames one step adds (1280 / 160). */
export const MEL_PER_FRAME = 8;
export const EMBEDDING_DIM = 96;
/** Embeddings one keyword head scores. */
export const HEAD_WINDOW = 16;

/** One graph of the pipeline: its file and the tensor names it takes and gives. */
export interface WakeGraph {
  path: string;
  input: string;
  output: string;
}

export interface WakeHeadGraph extends WakeGraph {
  /** Keyword name, as detections report it. */
  name: string;
}

export interface WakeFiles {
  melspectrogram: WakeGraph;
  embedding: WakeGraph;
  heads: WakeHeadGraph[];
}

export type WakeLoadOptions = Omit<GraphLoadOptions, 'inputs' | 'outputs'>;

/** What a stream carries from one step to the next. */
export interface WakeState {
  tail: Float32Array;
  mel: Float32Array;
  embeddings: Float32Array;
}

export interface WakeStep {
  /** One score in [0, 1] per keyword, in the order of `keywords`. */
  scores: Float32Array;
  state: WakeState;
}

function shapeText(shape: readonly number[] | undefined): string {
  return shape ? `[${shape.join(',')}]` : '[unknown]';
}

function sized(name: string, data: ArrayLike<number>, n: number): Float32Array {
  if (data.length !== n)
    throw new EngineError('EINVAL', `wake pipeline: ${name} has ${data.length} values, expected ${n}`);
  return data instanceof Float32Array ? data : Float32Array.from(data);
}

/** The state a fresh stream starts from: silence for the tail, openWakeWord's all-ones mel buffer. */
export function freshMelState(): { tail: Float32Array; mel: Float32Array } {
  return { tail: new Float32Array(WAKE_TAIL_SAMPLES), mel: new Float32Array(MEL_WINDOW * MEL_BINS).fill(1) };
}

export class WakePipeline {
  readonly keywords: string[];
  readonly #mel: MnnGraph;
  readonly #embedding: MnnGraph;
  readonly #heads: MnnGraph[];
  /** Embedding of the fresh mel buffer, repeated: a fresh stream's embedding window. */
  readonly #freshEmbeddings: Float32Array;
  readonly #melInput = new Float32Array(WAKE_TAIL_SAMPLES + WAKE_FRAME_SAMPLES);

  private constructor(
    mel: MnnGraph,
    embedding: MnnGraph,
    heads: MnnGraph[],
    keywords: string[],
    fresh: Float32Array,
  ) {
    this.#mel = mel;
    this.#embedding = embedding;
    this.#heads = heads;
    this.keywords = keywords;
    this.#freshEmbeddings = fresh;
  }

  static async load(files: WakeFiles, options: WakeLoadOptions = {}): Promise<WakePipeline> {
    // No heads is allowed: the keyword generator uses the pipeline for its features only.
    const names = new Set<string>();
    for (const h of files.heads) {
      if (names.has(h.name)) throw new EngineError('EINVAL', `wake pipeline: keyword ${h.name} given twice`);
      names.add(h.name);
    }
    const open = (g: WakeGraph) =>
      MnnGraph.load(g.path, { ...options, inputs: [g.input], outputs: [g.output] });
    const loaded: MnnGraph[] = [];
    try {
      const mel = await open(files.melspectrogram);
      loaded.push(mel);
      const embedding = await open(files.embedding);
      loaded.push(embedding);
      const heads: MnnGraph[] = [];
      for (const h of files.heads) {
        const m = await open(h);
        loaded.push(m);
        heads.push(m);
      }
      const probe = new WakePipeline(mel, embedding, heads, [...names], new Float32Array(0));
      const one = await probe.#embed(freshMelState().mel);
      const fresh = new Float32Array(HEAD_WINDOW * EMBEDDING_DIM);
      for (let i = 0; i < HEAD_WINDOW; i++) fresh.set(one, i * EMBEDDING_DIM);
      const pipeline = new WakePipeline(mel, embedding, heads, [...names], fresh);
      // One step on silence proves every graph takes the shapes the pipeline gives it.
      await pipeline.step(new Float32Array(WAKE_FRAME_SAMPLES), pipeline.initialState());
      return pipeline;
    } catch (err) {
      await Promise.allSettled(loaded.map((m) => m.dispose()));
      throw err;
    }
  }

  initialState(): WakeState {
    return { ...freshMelState(), embeddings: this.#freshEmbeddings.slice() };
  }

  /** Mel frames (already `/10 + 2`) for the tail + 1280 new samples (floats in [-1, 1]). */
  async melFrames(tail: Float32Array, audio: Float32Array): Promise<Float32Array> {
    const input = this.#melInput;
    // The models were trained on int16 sample values.
    for (let i = 0; i < WAKE_TAIL_SAMPLES; i++) input[i] = (tail[i] ?? 0) * 32768;
    for (let i = 0; i < WAKE_FRAME_SAMPLES; i++) input[WAKE_TAIL_SAMPLES + i] = (audio[i] ?? 0) * 32768;
    const [out] = await this.#mel.forward([{ data: input, shape: [1, input.length] }]);
    if (!out || out.data.length % MEL_BINS !== 0 || out.data.length < MEL_PER_FRAME * MEL_BINS)
      throw new EngineError(
        'EENGINE',
        `wake pipeline: the melspectrogram gave ${shapeText(out?.shape)}, expected [1,1,${MEL_PER_FRAME},${MEL_BINS}]`,
      );
    const frames = out.data.length / MEL_BINS;
    // The last 8 frames are the new ones (a graph that gives more keeps the grid: frame k starts at 160·k).
    const data = out.data as Float32Array;
    const mel = new Float32Array(MEL_PER_FRAME * MEL_BINS);
    const from = (frames - MEL_PER_FRAME) * MEL_BINS;
    for (let i = 0; i < mel.length; i++) mel[i] = (data[from + i] ?? 0) / 10 + 2;
    return mel;
  }

  async #embed(mel: Float32Array): Promise<Float32Array> {
    const [out] = await this.#embedding.forward([{ data: mel, shape: [1, MEL_WINDOW, MEL_BINS, 1] }]);
    if (!out || out.data.length !== EMBEDDING_DIM)
      throw new EngineError(
        'EENGINE',
        `wake pipeline: the embedding model gave ${shapeText(out?.shape)}, expected [1,1,1,${EMBEDDING_DIM}]`,
      );
    return Float32Array.from(out.data as Float32Array);
  }

  /** Features only (no heads): what the keyword generator trains on. */
  async features(audio: Float32Array, state: WakeState): Promise<WakeState> {
    if (audio.length !== WAKE_FRAME_SAMPLES)
      throw new EngineError(
        'EINVAL',
        `wake pipeline: a frame is ${WAKE_FRAME_SAMPLES} samples of 16 kHz audio, got ${audio.length}`,
      );
    const newMel = await this.melFrames(state.tail, audio);
    const mel = new Float32Array(MEL_WINDOW * MEL_BINS);
    mel.set(state.mel.subarray(MEL_PER_FRAME * MEL_BINS));
    mel.set(newMel, (MEL_WINDOW - MEL_PER_FRAME) * MEL_BINS);
    const embedding = await this.#embed(mel);
    const embeddings = new Float32Array(HEAD_WINDOW * EMBEDDING_DIM);
    embeddings.set(state.embeddings.subarray(EMBEDDING_DIM));
    embeddings.set(embedding, (HEAD_WINDOW - 1) * EMBEDDING_DIM);
    return { tail: audio.slice(WAKE_FRAME_SAMPLES - WAKE_TAIL_SAMPLES), mel, embeddings };
  }

  async step(audio: Float32Array, state: WakeState): Promise<WakeStep> {
    const next = await this.features(audio, state);
    return { scores: await this.score(next.embeddings), state: next };
  }

  /** Every keyword head's score on one window of embeddings [16,96] (step's second half: a benchmark replays
   *  embeddings it computed once through heads it judges). */
  async score(embeddings: Float32Array): Promise<Float32Array> {
    const scores = new Float32Array(this.#heads.length);
    for (const [i, head] of this.#heads.entries()) {
      const [out] = await head.forward([{ data: embeddings, shape: [1, HEAD_WINDOW, EMBEDDING_DIM] }]);
      if (out?.data.length !== 1)
        throw new EngineError(
          'EENGINE',
          `wake pipeline: keyword head ${this.keywords[i]} gave ${shapeText(out?.shape)}, expected [1,1]`,
        );
      scores[i] = Math.min(1, Math.max(0, out.data[0] ?? 0));
    }
    return scores;
  }

  /**
   * The step in tensor form, for an engine host's `forward`: inputs audio [1,1280], tail [480], mel [76,32],
   * embeddings [16,96] (each empty for a fresh stream); outputs `scores` [K] and the three state tensors under the same names.
   */
  async forward(inputs: Tensor[]): Promise<GraphOutput[]> {
    const [audio, tail, mel, embeddings] = inputs;
    if (!audio || !tail || !mel || !embeddings || inputs.length !== 4)
      throw new EngineError(
        'EINVAL',
        `wake pipeline: forward takes 4 tensors (audio, tail, mel, embeddings), got ${inputs.length}`,
      );
    // Empty state tensors start a fresh stream (the caller cannot know the fresh embeddings).
    const fresh = this.initialState();
    const state: WakeState = {
      tail: tail.data.length === 0 ? fresh.tail : sized('tail', tail.data, WAKE_TAIL_SAMPLES),
      mel: mel.data.length === 0 ? fresh.mel : sized('mel', mel.data, MEL_WINDOW * MEL_BINS),
      embeddings:
        embeddings.data.length === 0
          ? fresh.embeddings
          : sized('embeddings', embeddings.data, HEAD_WINDOW * EMBEDDING_DIM),
    };
    const r = await this.step(sized('audio', audio.data, WAKE_FRAME_SAMPLES), state);
    return [
      { name: 'scores', data: r.scores, shape: [r.scores.length], type: 'float32' },
      { name: 'tail', data: r.state.tail, shape: [WAKE_TAIL_SAMPLES], type: 'float32' },
      { name: 'mel', data: r.state.mel, shape: [MEL_WINDOW, MEL_BINS], type: 'float32' },
      { name: 'embeddings', data: r.state.embeddings, shape: [HEAD_WINDOW, EMBEDDING_DIM], type: 'float32' },
    ];
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([this.#mel, this.#embedding, ...this.#heads].map((m) => m.dispose()));
  }
}
