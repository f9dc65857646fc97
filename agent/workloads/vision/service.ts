// The camera VLM: query mode (one frame and a question → a streamed answer) and watch mode (a fixed prompt every
// N seconds or when the scene changes; answers as events with a thumbnail). Requests share the VLM slot's gate,
// and watch mode waits while a voice turn runs.
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import type { VisionConfig } from '../../config/sections/vision.js';
import type { ChatModel, ChatResult, ChatStream } from '../shared/chat-model.js';
import { isAbort, WorkloadError } from '../shared/errors.js';
import type { SlotGate, VoicePriority } from '../slots/scheduler.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import type { FrameSource } from './frame-sources.js';
import { encodePng, fitFrame, type RgbFrame } from './image.js';
import { LatestFrame } from './latest-frame.js';
import { SceneChangeDetector, type SceneDiff } from './scene-change.js';

export interface VisionDeps {
  models: WorkloadModels;
  gate: SlotGate;
  clock: Clock;
  priority?: VoicePriority;
}

export interface QueryRequest {
  frame: RgbFrame;
  question: string;
  maxNewTokens?: number;
  signal?: AbortSignal;
}

export function checkFrame(frame: RgbFrame): void {
  if (
    !Number.isInteger(frame.width) ||
    !Number.isInteger(frame.height) ||
    frame.width < 1 ||
    frame.height < 1 ||
    frame.data.length !== frame.width * frame.height * 3
  ) {
    throw new WorkloadError(
      'EFRAME',
      `Frame data is ${frame.data.length} bytes, expected ${frame.width}×${frame.height}×3 RGB bytes`,
    );
  }
}

export type WatchTrigger = 'first' | 'scene-change' | 'interval';

export interface WatchAnswer {
  seq: number;
  trigger: WatchTrigger;
  diff: SceneDiff;
  prompt: string;
  text: string;
  /** PNG, thumbnailWidth wide. */
  thumbnail: Buffer;
  capturedAtMs: number;
  wallMs: number;
  result: ChatResult;
}

export type WatchEvents = {
  /** Every frame the watcher looked at, asked about or not. */
  frame: { seq: number; diff: SceneDiff; trigger: WatchTrigger | undefined };
  answer: WatchAnswer;
  /** Waiting for a voice turn to finish before asking. */
  paused: { reason: 'voice' };
  error: { message: string };
  stopped: { framesSeen: number; framesDropped: number; answers: number };
};

export interface WatchOptions {
  prompt: string;
  intervalS: number;
  onSceneChange: boolean;
}

export class VisionService {
  readonly #config: VisionConfig;
  readonly #deps: VisionDeps;

  constructor(config: VisionConfig, deps: VisionDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  get config(): VisionConfig {
    return this.#config;
  }

  async model(): Promise<ChatModel> {
    if (!this.#config.enabled)
      throw new WorkloadError('ESTATE', 'Vision is disabled in the configuration (vision.enabled)');
    const model = this.#deps.models.chat('vision.vlm');
    if (!model.capabilities.vision) {
      throw new WorkloadError(
        'ENOMODEL',
        `${model.id} has no vision encoder (is_visual is not set): it cannot answer about images`,
      );
    }
    return model;
  }

  /** One frame and a question; the gate is held until the answer's stream ends. */
  async query(request: QueryRequest): Promise<ChatStream> {
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
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Starts watch mode over a frame source; stop it with the signal. */
  watch(source: FrameSource, options: WatchOptions, signal: AbortSignal): WatchRunner {
    return new WatchRunner(this, source, options, signal, this.#deps);
  }

  /** For the watcher: the same request path as query, with its thumbnail size. */
  get thumbnailWidth(): number {
    return this.#config.watch.thumbnailWidth;
  }

  get yieldToVoice(): boolean {
    return this.#config.yieldToVoice;
  }

  get sceneOptions() {
    return {
      meanAbsDiff: this.#config.watch.meanAbsDiff,
      changedFraction: this.#config.watch.changedFraction,
    };
  }
}

export class WatchRunner extends TypedEventEmitter<WatchEvents> {
  readonly done: Promise<void>;
  readonly #queue = new LatestFrame();
  framesSeen = 0;
  answers = 0;

  constructor(
    service: VisionService,
    source: FrameSource,
    options: WatchOptions,
    signal: AbortSignal,
    deps: VisionDeps,
  ) {
    super();
    const detector = new SceneChangeDetector(service.sceneOptions);
    let stopped = false;
    const pump = async () => {
      try {
        for await (const f of source) {
          // A live camera never ends by itself: the pump stops at the next frame after the watcher does.
          if (signal.aborted || stopped) break;
          this.#queue.put(f);
        }
      } catch (err) {
        if (!signal.aborted) this.emit('error', { message: errorMessage(err) });
      } finally {
        this.#queue.end();
      }
    };
    const onAbort = () => this.#queue.close();
    signal.addEventListener('abort', onAbort, { once: true });
    const consume = async () => {
      let lastAskMs = Number.NEGATIVE_INFINITY;
      for (let seq = 0; ; seq++) {
        const next = await this.#queue.take();
        if (!next || signal.aborted) break;
        this.framesSeen++;
        const diff = detector.update(next.frame);
        const now = deps.clock.monotonicMs();
        let trigger: WatchTrigger | undefined;
        if (seq === 0) trigger = 'first';
        else if (options.onSceneChange && diff.changed) trigger = 'scene-change';
        else if (options.intervalS > 0 && now - lastAskMs >= options.intervalS * 1000) trigger = 'interval';
        this.emit('frame', { seq, diff, trigger });
        if (!trigger) continue;
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
        } catch (err) {
          if (signal.aborted || isAbort(err)) break;
          this.emit('error', { message: errorMessage(err) });
          // A busy gate or a missing model: skip this frame, keep watching.
          if (err instanceof WorkloadError && (err.code === 'ENOENGINE' || err.code === 'ENOMODEL')) break;
        }
      }
    };
    this.done = (async () => {
      // Starts on the next turn of the event loop, so the caller attaches its listeners first.
      await new Promise((resolve) => setImmediate(resolve));
      const pumping = pump();
      try {
        await consume();
      } finally {
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

  get framesDropped(): number {
    return this.#queue.dropped;
  }
}
