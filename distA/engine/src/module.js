// Module: a non-LLM MNN model (VAD, ASR encoder, classifier) through Express::Module. Inputs are typed arrays
// with shapes; the addon reuses its input tensors while shapes repeat, so a streaming caller (VAD every 32 ms)
// does not reallocate.
import { invalidParameter } from '../../agent/common/errors.js';
import { EngineError, fromNative } from './errors.js';
import { createAddonLoader } from './loader.js';
import { SerialQueue } from './serial-queue.js';
function isTensorData(v) {
    return (v instanceof Float32Array || v instanceof Int32Array || v instanceof Uint8Array || v instanceof Int8Array);
}
function names(what, v) {
    if (!Array.isArray(v) || v.length === 0 || v.some((n) => typeof n !== 'string' || n.length === 0)) {
        throw invalidParameter(what, 'a non-empty array of tensor names', v);
    }
    return v;
}
export class Module {
    path;
    info;
    #handle;
    #queue = new SerialQueue();
    #disposed;
    constructor(path, handle) {
        this.path = path;
        this.#handle = handle;
        this.info = handle.info();
    }
    static async load(path, options) {
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
        const handle = new addon.ModuleHandle();
        try {
            await handle.load({
                path,
                inputs,
                outputs,
                backend: options.backend ?? 'cpu',
                threads,
                precision: options.precision ?? 'normal',
                memory: options.memory ?? 'normal',
                power: options.power ?? 'normal',
            });
        }
        catch (err) {
            throw fromNative(err);
        }
        return new Module(path, handle);
    }
    /** Runs the model once; inputs in the order given at load. */
    forward(inputs) {
        if (this.#disposed)
            return Promise.reject(new EngineError('EDISPOSED', 'Module.forward: the model was disposed'));
        if (!Array.isArray(inputs))
            return Promise.reject(invalidParameter('inputs', 'an array of tensors', inputs));
        for (const [i, t] of inputs.entries()) {
            if (t === null || typeof t !== 'object' || !isTensorData(t.data)) {
                return Promise.reject(invalidParameter(`inputs[${i}].data`, 'a Float32Array, Int32Array, Uint8Array or Int8Array', t?.data));
            }
            if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isInteger(d) || d < 0)) {
                return Promise.reject(invalidParameter(`inputs[${i}].shape`, 'an array of non-negative integers', t.shape));
            }
        }
        return this.#queue
            .run(() => this.#handle.forward(inputs.map((t) => ({ data: t.data, shape: t.shape }))))
            .catch((err) => {
            throw fromNative(err);
        });
    }
    dispose() {
        if (!this.#disposed) {
            this.#disposed = this.#queue
                .run(() => this.#handle.dispose())
                .catch((err) => {
                throw fromNative(err);
            });
        }
        return this.#disposed;
    }
    [Symbol.asyncDispose]() {
        return this.dispose();
    }
}
//# sourceMappingURL=module.js.map