// MnnGraph: a non-LLM MNN model (VAD, ASR encoder, classifier) through Express::Module. Inputs are typed arrays
// with shapes; the addon reuses its input tensors while shapes repeat, so a streaming caller (VAD every 32 ms)
// does not reallocate.
import { invalidParameter } from '../../lib/errors.js';
import { EngineError, fromNative } from './errors.js';
import { encoderPrecision } from './llm-options.js';
import { createAddonLoader } from './loader.js';
import type {
  BackendName,
  EngineAddon,
  NativeGraphHandle,
  NativeGraphInfo,
  NativeTensorOut,
  TensorData,
} from './native.js';
import { SerialQueue } from './serial-queue.js';

export interface GraphLoadOptions {
  /** Input names in the order forward() takes them (needed for models with control flow, e.g. Silero VAD). */
  inputs: string[];
  outputs: string[];
  backend?: BackendName;
  threads?: number;
  precision?: 'low' | 'normal' | 'high';
  memory?: 'low' | 'normal' | 'high';
  power?: 'low' | 'normal' | 'high';
  addon?: EngineAddon;
}

export interface Tensor {
  data: TensorData;
  shape: number[];
}

export type GraphOutput = NativeTensorOut;

function isTensorData(v: unknown): v is TensorData {
  return (
    v instanceof Float32Array || v instanceof Int32Array || v instanceof Uint8Array || v instanceof Int8Array
  );
}

function names(what: string, v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((n) => typeof n !== 'string' || n.length === 0)) {
    throw invalidParameter(what, 'a non-empty array of tensor names', v);
  }
  return v as string[];
}

export class MnnGraph {
  readonly path: string;
  readonly info: NativeGraphInfo;
  readonly #handle: NativeGraphHandle;
  readonly #queue = new SerialQueue();
  #disposed: Promise<void> | undefined;

  private constructor(path: string, handle: NativeGraphHandle) {
    this.path = path;
    this.#handle = handle;
    this.info = handle.info();
  }

  static async load(path: string, options: GraphLoadOptions): Promise<MnnGraph> {
    if (typeof path !== 'string' || path.length === 0)
      throw invalidParameter('path', 'a path to an .mnn file', path);
    if (options === null || typeof options !== 'object') {
      throw invalidParameter('options', 'an object with inputs and outputs', options);
    }
    const inputs = names('inputs', options.inputs);
    const outputs = names('outputs', options.outputs);
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1)
      throw invalidParameter('threads', 'a positive integer', threads);
    const addon = options.addon ?? createAddonLoader().load();
    const handle = new addon.GraphHandle();
    try {
      await handle.load({
        path,
        inputs,
        outputs,
        backend: options.backend ?? 'cpu',
        threads,
        // Never MNN's Arm82 fp16 backend on arm64: Silero VAD v5 scores every frame 0.002 there (encoderPrecision).
        precision: encoderPrecision(options.precision) ?? 'normal',
        memory: options.memory ?? 'normal',
        power: options.power ?? 'normal',
      });
    } catch (err) {
      throw fromNative(err);
    }
    return new MnnGraph(path, handle);
  }

  /** Runs the model once; inputs in the order given at load. */
  forward(inputs: Tensor[]): Promise<GraphOutput[]> {
    if (this.#disposed)
      return Promise.reject(new EngineError('EDISPOSED', 'Module.forward: the model was disposed'));
    if (!Array.isArray(inputs))
      return Promise.reject(invalidParameter('inputs', 'an array of tensors', inputs));
    for (const [i, t] of inputs.entries()) {
      if (t === null || typeof t !== 'object' || !isTensorData(t.data)) {
        return Promise.reject(
          invalidParameter(
            `inputs[${i}].data`,
            'a Float32Array, Int32Array, Uint8Array or Int8Array',
            t?.data,
          ),
        );
      }
      if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isInteger(d) || d < 0)) {
        return Promise.reject(
          invalidParameter(`inputs[${i}].shape`, 'an array of non-negative integers', t.shape),
        );
      }
    }
    return this.#queue
      .run(() => this.#handle.forward(inputs.map((t) => ({ data: t.data, shape: t.shape }))))
      .catch((err: unknown) => {
        throw fromNative(err);
      });
  }

  dispose(): Promise<void> {
    if (!this.#disposed) {
      this.#disposed = this.#queue
        .run(() => this.#handle.dispose())
        .catch((err: unknown) => {
          throw fromNative(err);
        });
    }
    return this.#disposed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
