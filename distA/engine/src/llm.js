// Llm: an MNN LLM (text, vision or audio input) with a token stream. A native thread per generation decodes at
// most `readAhead` tokens ahead of the consumer and hands tokens over in batches, so the decode loop never waits
// for a round trip through JS, an AbortSignal stops generation within one token, and a slow consumer slows the
// model instead of growing a buffer.
import { dirname, isAbsolute, join } from 'node:path';
import { invalidParameter } from '../../agent/common/errors.js';
import { EngineError, fromNative } from './errors.js';
import { createAddonLoader } from './loader.js';
import { buildPrefillRequest } from './prompt.js';
import { SerialQueue } from './serial-queue.js';
/** Upper bound of GenerateOptions.readAhead: enough to cover any consumer hiccup, small next to a KV cache. */
export const MAX_READ_AHEAD = 256;
export function emptyDelivery() {
    return { tokens: 0, batches: 0, startUs: 0, firstTokenUs: 0, lastTokenUs: 0, handoffUsSum: 0 };
}
/** CLOCK_MONOTONIC in microseconds, the clock the addon stamps tokens with. */
export function monotonicUs() {
    return Number(process.hrtime.bigint()) / 1000;
}
function recordBatch(d, b) {
    if (b.tokens === 0)
        return;
    const now = monotonicUs();
    if (d.tokens === 0)
        d.firstTokenUs = b.firstUs;
    d.tokens += b.tokens;
    d.batches += 1;
    d.lastTokenUs = b.lastUs;
    d.handoffUsSum += b.tokens * now - b.producedUsSum;
}
/** Batches from the native callback, waiting for the generator that takes them. */
class BatchInbox {
    #queue = [];
    #wake;
    put = (batch) => {
        this.#queue.push(batch);
        const wake = this.#wake;
        this.#wake = undefined;
        wake?.();
    };
    async take() {
        while (this.#queue.length === 0) {
            await new Promise((resolve) => {
                this.#wake = resolve;
            });
        }
        return this.#queue.shift();
    }
}
/** MNN's talkers (Qwen2.5-Omni token2wav, Qwen3-TTS) produce 24 kHz mono float PCM. */
export const SPEECH_SAMPLE_RATE = 24000;
/** The files MNN reads at load, as its config resolves them (base_dir + name, with MNN's default names). */
export function weightFiles(configPath, config) {
    const base = typeof config['base_dir'] === 'string' ? config['base_dir'] : `${dirname(configPath)}/`;
    const name = (key, fallback) => typeof config[key] === 'string' ? config[key] : fallback;
    const llmModel = name('llm_model', 'llm.mnn');
    const files = [
        llmModel,
        name('llm_weight', `${llmModel}.weight`),
        name('embedding_file', 'embeddings_bf16.bin'),
    ];
    if (config['is_visual'] === true)
        files.push(name('visual_model', 'visual.mnn'), `${name('visual_model', 'visual.mnn')}.weight`);
    if (config['is_audio'] === true)
        files.push(name('audio_model', 'audio.mnn'), `${name('audio_model', 'audio.mnn')}.weight`);
    return files.map((f) => (isAbsolute(f) ? f : join(base, f)));
}
function checkOverrides(overrides) {
    if (overrides === undefined)
        return {};
    if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
        throw invalidParameter('overrides', 'an object of MNN config keys', overrides);
    }
    for (const [k, v] of Object.entries(overrides)) {
        if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint' || v === undefined) {
            throw invalidParameter(`overrides.${k}`, 'a JSON value', v);
        }
    }
    return overrides;
}
/**
 * A stream of UTF-8-whole text pieces; `result` settles when the stream ends (also when broken off early).
 * Iterate it for one piece per token, or through batches() for every piece that is ready at once.
 */
export class LlmGeneration {
    result;
    /** Filled as tokens arrive; complete once the stream has ended. */
    delivery = emptyDelivery();
    #batches;
    #ack;
    #iterated = false;
    constructor(run, ack) {
        let settle;
        let fail;
        this.result = new Promise((resolve, reject) => {
            settle = resolve;
            fail = reject;
        });
        // The error also surfaces through iteration; this keeps an unobserved `result` from crashing the process.
        this.result.catch(() => { });
        this.#ack = ack;
        const batches = run(settle, this.delivery);
        this.#batches = (async function* () {
            try {
                yield* batches;
            }
            catch (err) {
                fail(err);
                throw err;
            }
        })();
    }
    /** One piece per token; taking a piece lets the decode thread run one token further. */
    async *[Symbol.asyncIterator]() {
        for await (const pieces of this.#take()) {
            for (const piece of pieces) {
                this.#ack(1);
                if (piece)
                    yield piece;
            }
        }
    }
    /** Every piece decoded since the last batch, at once (never empty). */
    async *batches() {
        for await (const pieces of this.#take()) {
            this.#ack(pieces.length);
            const text = pieces.filter((p) => p.length > 0);
            if (text.length > 0)
                yield text;
        }
    }
    /** Consumes the stream and returns the whole result. */
    async complete() {
        for await (const _ of this.batches()) {
            // pieces are collected by the generation itself
        }
        return this.result;
    }
    #take() {
        if (this.#iterated)
            throw new EngineError('ESTATE', 'a generation can be iterated only once');
        this.#iterated = true;
        return this.#batches;
    }
}
export class Llm {
    configPath;
    /** The merged configuration MNN will run with (config.json + llm_config.json + overrides). */
    config;
    capabilities;
    /** Set once load() has finished. */
    loadTiming = { readMs: 0, readBytes: 0, mnnLoadMs: 0 };
    #handle;
    #queue = new SerialQueue();
    #lastStats;
    #disposed;
    constructor(configPath, handle, config) {
        this.configPath = configPath;
        this.#handle = handle;
        this.config = config;
        this.capabilities = {
            vision: config['is_visual'] === true,
            audio: config['is_audio'] === true,
            talker: config['has_talker'] === true,
        };
    }
    /**
     * Reads the config, refuses backends this MNN cannot run (MNN would fall back to CPU without a word), then
     * loads the weights on a worker thread.
     */
    static async load(configPath, options = {}) {
        if (typeof configPath !== 'string' || configPath.length === 0) {
            throw invalidParameter('configPath', 'a path to an MNN LLM config.json', configPath);
        }
        const overrides = checkOverrides(options.overrides);
        const addon = options.addon ?? createAddonLoader().load();
        let handle;
        try {
            handle = new addon.LlmHandle(configPath, JSON.stringify(overrides));
        }
        catch (err) {
            throw fromNative(err);
        }
        try {
            const config = JSON.parse(handle.configJson());
            const llm = new Llm(configPath, handle, config);
            addon.checkBackend(String(config['backend_type'] ?? 'cpu'), `the LLM of ${configPath}`);
            if (llm.capabilities.vision || llm.capabilities.audio) {
                const mllm = (config['mllm'] ?? {});
                addon.checkBackend(String(mllm['backend_type'] ?? 'cpu'), `the vision/audio encoder of ${configPath}`);
            }
            const t = await handle.load(weightFiles(configPath, config));
            llm.loadTiming = { readMs: t.readUs / 1000, readBytes: t.readBytes, mnnLoadMs: t.loadUs / 1000 };
            return llm;
        }
        catch (err) {
            await handle.dispose().catch(() => { });
            throw fromNative(err);
        }
    }
    /** Stats of the last finished generation. */
    get lastStats() {
        return this.#lastStats;
    }
    get disposed() {
        return this.#disposed !== undefined;
    }
    generate(input, options = {}) {
        this.#assertLive('generate');
        const defaultMax = Number(this.config['max_new_tokens'] ?? 512);
        const maxNewTokens = options.maxNewTokens ?? defaultMax;
        if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
            throw invalidParameter('maxNewTokens', 'a positive integer', options.maxNewTokens);
        }
        const request = buildPrefillRequest({
            input,
            maxNewTokens,
            applyTemplate: options.applyTemplate ?? this.config['use_template'] !== false,
            ...(options.images ? { images: options.images } : {}),
            ...(options.audios ? { audios: options.audios } : {}),
        }, { vision: this.capabilities.vision, audio: this.capabilities.audio, name: this.configPath });
        const readAhead = options.readAhead ?? 1;
        if (!Number.isInteger(readAhead) || readAhead < 1 || readAhead > MAX_READ_AHEAD) {
            throw invalidParameter('readAhead', `an integer from 1 to ${MAX_READ_AHEAD}`, options.readAhead);
        }
        const signal = options.signal;
        const handle = this.#handle;
        const queue = this.#queue;
        const record = (stats) => {
            this.#lastStats = stats;
        };
        return new LlmGeneration(async function* (settle, delivery) {
            const release = await queue.acquire();
            const onAbort = () => handle.cancel();
            const inbox = new BatchInbox();
            let text = '';
            let reason = 'aborted';
            let failed = false;
            let running = false;
            try {
                if (!signal?.aborted) {
                    signal?.addEventListener('abort', onAbort, { once: true });
                    delivery.startUs = monotonicUs();
                    try {
                        handle.generate(request, readAhead, inbox.put);
                    }
                    catch (err) {
                        throw fromNative(err);
                    }
                    running = true;
                    for (;;) {
                        const batch = await inbox.take();
                        recordBatch(delivery, batch);
                        if (batch.done)
                            running = false;
                        if (batch.error)
                            throw fromNative(batch.error);
                        for (const piece of batch.pieces)
                            text += piece;
                        if (batch.pieces.length > 0)
                            yield batch.pieces;
                        if (batch.done) {
                            reason = batch.reason ?? 'aborted';
                            break;
                        }
                    }
                }
            }
            catch (err) {
                failed = true;
                throw err;
            }
            finally {
                signal?.removeEventListener('abort', onAbort);
                try {
                    // Broken off early (the consumer stopped iterating) counts as aborted: the decode thread stops
                    // within one token and the model is free once its last batch is in.
                    if (running) {
                        handle.cancel();
                        for (;;) {
                            const batch = await inbox.take();
                            recordBatch(delivery, batch);
                            if (batch.done)
                                break;
                        }
                    }
                    if (!failed) {
                        const stats = { ...handle.stats(), finishReason: reason };
                        record(stats);
                        settle({ text, finishReason: reason, stats });
                    }
                }
                finally {
                    release();
                }
            }
        }, (tokens) => handle.ack(tokens));
    }
    /** Runs a generation to its end and returns the text with its stats. */
    complete(input, options = {}) {
        return this.generate(input, options).complete();
    }
    /**
     * Speech out for models with a talker: PCM chunks pulled through a bounded native queue (8 chunks), so an
     * unread stream pauses the talker; the signal (or breaking off) stops it.
     */
    speak(options = {}) {
        this.#assertLive('speak');
        if (!this.capabilities.talker) {
            throw new EngineError('ENOTSUP', `${this.configPath} has no talker (has_talker is not set in its config)`);
        }
        if (options.text !== undefined && (typeof options.text !== 'string' || options.text.length === 0)) {
            throw invalidParameter('text', 'a non-empty string', options.text);
        }
        const { signal, ...request } = options;
        const handle = this.#handle;
        const queue = this.#queue;
        return (async function* () {
            const release = await queue.acquire();
            const onAbort = () => handle.cancel();
            signal?.addEventListener('abort', onAbort, { once: true });
            const running = handle.speak(request);
            let finished = false;
            try {
                for (;;) {
                    const chunk = await handle.nextSpeechChunk();
                    if (chunk === null)
                        break;
                    yield { samples: chunk.samples, sampleRate: SPEECH_SAMPLE_RATE, last: chunk.last };
                }
                finished = true;
            }
            finally {
                signal?.removeEventListener('abort', onAbort);
                if (!finished)
                    handle.cancel();
                try {
                    await running.catch((err) => {
                        throw fromNative(err);
                    });
                }
                finally {
                    release();
                }
            }
        })();
    }
    /** Clears the conversation (KV cache and history). */
    async reset() {
        return this.#call('reset', () => this.#handle.reset());
    }
    /** Drops history tokens [begin, end) from the KV cache; end 0 = up to the current length. */
    async eraseHistory(begin, end = 0) {
        if (!Number.isInteger(begin) || begin < 0)
            throw invalidParameter('begin', 'a non-negative integer', begin);
        if (!Number.isInteger(end) || end < 0)
            throw invalidParameter('end', 'a non-negative integer', end);
        return this.#call('eraseHistory', () => this.#handle.eraseHistory(begin, end));
    }
    async encode(text) {
        if (typeof text !== 'string')
            throw invalidParameter('text', 'a string', text);
        return this.#call('encode', () => this.#handle.encode(text));
    }
    async decode(ids) {
        const arr = ids instanceof Int32Array ? ids : Int32Array.from(ids);
        return this.#call('decode', () => this.#handle.decode(arr));
    }
    /** Stops a running generation, waits for in-flight calls, frees the model. Idempotent. */
    dispose() {
        if (!this.#disposed) {
            this.#handle.cancel();
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
    #assertLive(what) {
        if (this.#disposed)
            throw new EngineError('EDISPOSED', `Llm.${what}: the model was disposed`);
    }
    #call(what, fn) {
        this.#assertLive(what);
        return this.#queue.run(fn).catch((err) => {
            throw fromNative(err);
        });
    }
}
//# sourceMappingURL=llm.js.map