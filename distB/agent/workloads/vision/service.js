import { errorMessage } from '../../common/errors.js';
import { TypedEventEmitter } from '../../common/typed-events.js';
import { isAbort, WorkloadError } from '../shared/errors.js';
import { encodePng, fitFrame } from './image.js';
import { LatestFrame } from './latest-frame.js';
import { SceneChangeDetector } from './scene-change.js';
export function checkFrame(frame) {
    if (!Number.isInteger(frame.width) ||
        !Number.isInteger(frame.height) ||
        frame.width < 1 ||
        frame.height < 1 ||
        frame.data.length !== frame.width * frame.height * 3) {
        throw new WorkloadError('EFRAME', `Frame data is ${frame.data.length} bytes, expected ${frame.width}×${frame.height}×3 RGB bytes`);
    }
}
export class VisionService {
    #config;
    #deps;
    constructor(config, deps) {
        this.#config = config;
        this.#deps = deps;
    }
    get config() {
        return this.#config;
    }
    async model() {
        if (!this.#config.enabled)
            throw new WorkloadError('ESTATE', 'Vision is disabled in the configuration (vision.enabled)');
        const model = this.#deps.models.chat('vision.vlm');
        if (!model.capabilities.vision) {
            throw new WorkloadError('ENOMODEL', `${model.id} has no vision encoder (is_visual is not set): it cannot answer about images`);
        }
        return model;
    }
    /** One frame and a question; the gate is held until the answer's stream ends. */
    async query(request) {
        checkFrame(request.frame);
        if (typeof request.question !== 'string' || request.question.trim().length === 0) {
            throw new WorkloadError('EFRAME', 'A vision query needs a non-empty question');
        }
        const model = await this.model();
        const release = await this.#deps.gate.acquire(request.signal);
        try {
            const frame = fitFrame(request.frame, this.#config.frameWidth, this.#config.frameHeight);
            const stream = model.generate({
                messages: [{ role: 'user', content: request.question }],
                images: [{ data: frame.data, width: frame.width, height: frame.height }],
                maxNewTokens: request.maxNewTokens ?? this.#config.maxNewTokens,
                ...(request.signal ? { signal: request.signal } : {}),
            });
            stream.result.then(release, release);
            return stream;
        }
        catch (err) {
            release();
            throw err;
        }
    }
    /** Starts watch mode over a frame source; stop it with the signal. */
    watch(source, options, signal) {
        return new WatchRunner(this, source, options, signal, this.#deps);
    }
    /** For the watcher: the same request path as query, with its thumbnail size. */
    get thumbnailWidth() {
        return this.#config.watch.thumbnailWidth;
    }
    get yieldToVoice() {
        return this.#config.yieldToVoice;
    }
    get sceneOptions() {
        return {
            meanAbsDiff: this.#config.watch.meanAbsDiff,
            changedFraction: this.#config.watch.changedFraction,
        };
    }
}
export class WatchRunner extends TypedEventEmitter {
    done;
    #queue = new LatestFrame();
    framesSeen = 0;
    answers = 0;
    constructor(service, source, options, signal, deps) {
        super();
        const detector = new SceneChangeDetector(service.sceneOptions);
        let stopped = false;
        const pump = async () => {
            try {
                for await (const f of source) {
                    // A live camera never ends by itself: the pump stops at the next frame after the watcher does.
                    if (signal.aborted || stopped)
                        break;
                    this.#queue.put(f);
                }
            }
            catch (err) {
                if (!signal.aborted)
                    this.emit('error', { message: errorMessage(err) });
            }
            finally {
                this.#queue.end();
            }
        };
        const onAbort = () => this.#queue.close();
        signal.addEventListener('abort', onAbort, { once: true });
        const consume = async () => {
            let lastAskMs = Number.NEGATIVE_INFINITY;
            for (let seq = 0;; seq++) {
                const next = await this.#queue.take();
                if (!next || signal.aborted)
                    break;
                this.framesSeen++;
                const diff = detector.update(next.frame);
                const now = deps.clock.monotonicMs();
                let trigger;
                if (seq === 0)
                    trigger = 'first';
                else if (options.onSceneChange && diff.changed)
                    trigger = 'scene-change';
                else if (options.intervalS > 0 && now - lastAskMs >= options.intervalS * 1000)
                    trigger = 'interval';
                this.emit('frame', { seq, diff, trigger });
                if (!trigger)
                    continue;
                if (service.yieldToVoice && deps.priority?.voiceActive) {
                    this.emit('paused', { reason: 'voice' });
                    await deps.priority.waitForVoiceIdle(signal);
                }
                lastAskMs = now;
                try {
                    const stream = await service.query({ frame: next.frame, question: options.prompt, signal });
                    for await (const _ of stream) {
                        // the answer is published whole; streaming is for query mode
                    }
                    const result = await stream.result;
                    const thumb = fitFrame(next.frame, service.thumbnailWidth, service.thumbnailWidth);
                    this.answers++;
                    this.emit('answer', {
                        seq,
                        trigger,
                        diff,
                        prompt: options.prompt,
                        text: result.text.trim(),
                        thumbnail: encodePng(thumb),
                        capturedAtMs: next.atMs,
                        wallMs: deps.clock.nowMs(),
                        result,
                    });
                }
                catch (err) {
                    if (signal.aborted || isAbort(err))
                        break;
                    this.emit('error', { message: errorMessage(err) });
                    // A busy gate or a missing model: skip this frame, keep watching.
                    if (err instanceof WorkloadError && (err.code === 'ENOENGINE' || err.code === 'ENOMODEL'))
                        break;
                }
            }
        };
        this.done = (async () => {
            // Starts on the next turn of the event loop, so the caller attaches its listeners first.
            await new Promise((resolve) => setImmediate(resolve));
            const pumping = pump();
            try {
                await consume();
            }
            finally {
                stopped = true;
                signal.removeEventListener('abort', onAbort);
                this.#queue.close();
                await pumping;
                this.emit('stopped', {
                    framesSeen: this.framesSeen,
                    framesDropped: this.#queue.dropped,
                    answers: this.answers,
                });
            }
        })();
    }
    get framesDropped() {
        return this.#queue.dropped;
    }
}
//# sourceMappingURL=service.js.map