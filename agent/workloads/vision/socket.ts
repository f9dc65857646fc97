// The vision session socket (protocol in docs/WORKLOADS.md). A question is a JSON `ask` followed by one binary
// frame holding the image; watch mode is a JSON `watch`, then `frame` + binary image whenever the client has a
// new one. Answers stream back as `answer-delta` then `answer`; watch results as `watch-event` with a thumbnail.
import type { RawData, WebSocket } from 'ws';
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { HttpRouter } from '../../http/router.js';
import { MessageRateLimiter, type SessionLimiter, WS_CLOSE } from '../../http/session-limits.js';
import { WorkloadError } from '../shared/errors.js';
import type { TimedFrame } from './frame-sources.js';
import { decodeImage } from './image.js';
import type { VisionService, WatchRunner } from './service.js';

export const VISION_WS_PATH = '/ws/vision';

export interface VisionSocketDeps {
  router: HttpRouter;
  vision: VisionService;
  sessions: SessionLimiter;
  messagesPerSecond: number;
  clock: Clock;
  logger: Logger;
  /** Watch answers also go here (MQTT events through the fleet module). */
  publish?: (event: Record<string, unknown>) => void;
}

type Expecting = { kind: 'ask'; question: string; bytes: number } | { kind: 'frame'; bytes: number };

function toBuffer(data: RawData): Buffer {
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}

/** Frames pushed by the client, as a source for the watcher (which keeps only the newest pending one). */
class PushedFrames implements AsyncIterable<TimedFrame> {
  #waiter: ((f: TimedFrame | undefined) => void) | undefined;
  #pending: TimedFrame | undefined;
  #ended = false;

  push(f: TimedFrame): void {
    if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w(f);
    } else this.#pending = f;
  }

  end(): void {
    this.#ended = true;
    this.#waiter?.(undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TimedFrame> {
    for (;;) {
      const f =
        this.#pending ??
        (this.#ended ? undefined : await new Promise<TimedFrame | undefined>((r) => (this.#waiter = r)));
      this.#pending = undefined;
      if (!f) return;
      yield f;
    }
  }
}

function positiveInt(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw new WorkloadError('EFRAME', `${what} must be a positive integer`);
  return v;
}

export function registerVisionSocket(deps: VisionSocketDeps): () => void {
  return deps.router.upgrade(VISION_WS_PATH, (ws, up) =>
    attachVisionSocket(ws, deps, up.req.socket.remoteAddress),
  );
}

/** A control message (JSON), validated: sizes within vision.maxFrameBytes, watch defaults filled in. */
type Control =
  | { type: 'ask'; question: string; bytes: number }
  | { type: 'frame'; bytes: number }
  | { type: 'watch'; prompt: string; intervalMs: number }
  | { type: 'unwatch' };

function frameSize(v: unknown, what: string, maxBytes: number): number {
  const size = positiveInt(v, what);
  if (size > maxBytes)
    throw new WorkloadError(
      'EFRAME',
      `Image of ${size} bytes exceeds ${maxBytes} bytes (vision.maxFrameBytes)`,
    );
  return size;
}

function parseControl(bytes: Buffer, config: VisionService['config']): Control {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new WorkloadError('EFRAME', 'Control messages must be JSON objects with a "type"');
  }
  switch (m['type']) {
    case 'ask': {
      if (typeof m['question'] !== 'string' || m['question'].trim() === '') {
        throw new WorkloadError('EFRAME', 'ask.question must be a non-empty string');
      }
      return {
        type: 'ask',
        question: m['question'],
        bytes: frameSize(m['bytes'], 'ask.bytes', config.maxFrameBytes),
      };
    }
    case 'frame':
      return { type: 'frame', bytes: frameSize(m['bytes'], 'frame.bytes', config.maxFrameBytes) };
    case 'watch': {
      const prompt =
        typeof m['prompt'] === 'string' && m['prompt'].trim() ? m['prompt'] : config.watch.prompt;
      const intervalMs =
        m['intervalMs'] === undefined
          ? config.watch.intervalS * 1000
          : positiveInt(m['intervalMs'], 'watch.intervalMs');
      return { type: 'watch', prompt, intervalMs };
    }
    case 'unwatch':
      return { type: 'unwatch' };
    default:
      throw new WorkloadError(
        'EFRAME',
        `Unknown message type ${JSON.stringify(m['type'])} (expected ask, frame, watch, unwatch)`,
      );
  }
}

/** One client's session: the image a header announced, the questions asked, the watch running. */
class VisionSession {
  readonly lifetime = new AbortController();
  #expecting: Expecting | undefined;
  #askId = 0;
  #watch: { runner: WatchRunner; frames: PushedFrames; controller: AbortController } | undefined;

  constructor(
    private readonly deps: VisionSocketDeps,
    private readonly send: (event: Record<string, unknown>) => void,
  ) {}

  async handle(data: RawData, isBinary: boolean): Promise<void> {
    const bytes = toBuffer(data);
    if (isBinary) return this.#image(bytes);
    const control = parseControl(bytes, this.deps.vision.config);
    switch (control.type) {
      case 'ask':
        this.#expecting = { kind: 'ask', question: control.question, bytes: control.bytes };
        return;
      case 'frame':
        this.#expecting = { kind: 'frame', bytes: control.bytes };
        return;
      case 'watch':
        this.#startWatch(control.prompt, control.intervalMs);
        return;
      case 'unwatch':
        this.stopWatch();
        return;
    }
  }

  stopWatch(): void {
    this.#watch?.frames.end();
    this.#watch?.controller.abort();
    this.#watch = undefined;
  }

  /** A binary message: the image the last `ask` or `frame` announced. */
  async #image(bytes: Buffer): Promise<void> {
    const header = this.#expecting;
    this.#expecting = undefined;
    if (!header)
      throw new WorkloadError('EFRAME', 'Binary frame without a preceding "ask" or "frame" message');
    if (bytes.length !== header.bytes) {
      throw new WorkloadError(
        'EFRAME',
        `Image is ${bytes.length} bytes but the message announced ${header.bytes}`,
      );
    }
    if (header.kind === 'ask') return this.#ask(header.question, bytes);
    if (!this.#watch) throw new WorkloadError('EFRAME', 'Frame sent while not watching: send "watch" first');
    this.#watch.frames.push({ frame: await decodeImage(bytes), atMs: this.deps.clock.monotonicMs() });
  }

  async #ask(question: string, image: Buffer): Promise<void> {
    const { clock, vision } = this.deps;
    const id = ++this.#askId;
    const t0 = clock.monotonicMs();
    const frame = await decodeImage(image);
    const stream = await vision.query({ frame, question, signal: this.lifetime.signal });
    for await (const text of stream) this.send({ type: 'answer-delta', id, text });
    const result = await stream.result;
    this.send({ type: 'answer', id, text: result.text, latencyMs: clock.monotonicMs() - t0 });
  }

  #startWatch(prompt: string, intervalMs: number): void {
    this.stopWatch();
    const { clock, vision } = this.deps;
    const frames = new PushedFrames();
    const controller = new AbortController();
    const runner = vision.watch(
      frames,
      { prompt, intervalS: intervalMs / 1000, onSceneChange: true },
      AbortSignal.any([controller.signal, this.lifetime.signal]),
    );
    runner.on('answer', (a) => {
      const event = {
        type: 'watch-event',
        t: a.wallMs,
        text: a.text,
        changed: a.trigger !== 'interval',
        trigger: a.trigger,
        meanAbsDiff: a.diff.meanAbsDiff,
        latencyMs: clock.monotonicMs() - a.capturedAtMs,
        dropped: runner.framesDropped,
        thumbnail: `data:image/png;base64,${a.thumbnail.toString('base64')}`,
      };
      this.send(event);
      this.deps.publish?.({ ...event, source: 'dashboard' });
    });
    runner.on('error', (e) => this.send({ type: 'error', message: e.message }));
    this.#watch = { runner, frames, controller };
  }
}

export function attachVisionSocket(ws: WebSocket, deps: VisionSocketDeps, remote?: string): void {
  const release = deps.sessions.tryAcquire({ kind: 'dashboard vision', who: remote ?? 'unknown' });
  if (!release) {
    ws.close(WS_CLOSE.tooManySessions, deps.sessions.refusal().slice(0, 120));
    return;
  }
  const rate = new MessageRateLimiter(deps.clock, deps.messagesPerSecond, deps.messagesPerSecond * 2);
  const send = (event: Record<string, unknown>) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
  };
  const session = new VisionSession(deps, send);
  // Messages are handled one after another, in the order they came.
  let chain: Promise<void> = Promise.resolve();
  ws.on('message', (data, isBinary) => {
    if (!rate.take()) {
      ws.close(WS_CLOSE.rateLimited, rate.describe().slice(0, 120));
      return;
    }
    chain = chain
      .then(() => session.handle(data, isBinary))
      .catch((err: unknown) => {
        const code = (err as { code?: unknown }).code;
        send({ type: 'error', ...(typeof code === 'string' ? { code } : {}), message: errorMessage(err) });
      });
  });
  ws.on('close', () => {
    session.stopWatch();
    session.lifetime.abort(new WorkloadError('ECANCELLED', 'vision socket closed'));
    void chain.finally(release);
  });
  send({ type: 'ready' });
}
