// The vision session socket (protocol in docs/WORKLOADS.md). A question is a JSON `ask` followed by one binary
// frame holding the image; watch mode is a JSON `watch`, then `frame` + binary image whenever the client has a
// new one. Answers stream back as `answer-delta` then `answer`; watch results as `watch-event` with a thumbnail.
import type { RawData, WebSocket } from 'ws';
import type { Clock } from '../../common/clock.js';
import { errorMessage } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
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
  return deps.router.upgrade(VISION_WS_PATH, (ws) => attachVisionSocket(ws, deps));
}

export function attachVisionSocket(ws: WebSocket, deps: VisionSocketDeps): void {
  const release = deps.sessions.tryAcquire();
  if (!release) {
    ws.close(WS_CLOSE.tooManySessions, deps.sessions.refusal().slice(0, 120));
    return;
  }
  const rate = new MessageRateLimiter(deps.clock, deps.messagesPerSecond, deps.messagesPerSecond * 2);
  const maxBytes = deps.vision.config.maxFrameBytes;
  const lifetime = new AbortController();
  let expecting: Expecting | undefined;
  let askId = 0;
  let watch: { runner: WatchRunner; frames: PushedFrames; controller: AbortController } | undefined;
  let chain: Promise<void> = Promise.resolve();

  const send = (event: Record<string, unknown>) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
  };

  const stopWatch = () => {
    watch?.frames.end();
    watch?.controller.abort();
    watch = undefined;
  };

  const ask = async (question: string, image: Buffer) => {
    const id = ++askId;
    const t0 = deps.clock.monotonicMs();
    const frame = await decodeImage(image);
    const stream = await deps.vision.query({ frame, question, signal: lifetime.signal });
    for await (const text of stream) send({ type: 'answer-delta', id, text });
    const result = await stream.result;
    send({ type: 'answer', id, text: result.text, latencyMs: deps.clock.monotonicMs() - t0 });
  };

  const startWatch = (prompt: string, intervalMs: number) => {
    stopWatch();
    const frames = new PushedFrames();
    const controller = new AbortController();
    const runner = deps.vision.watch(
      frames,
      { prompt, intervalS: intervalMs / 1000, onSceneChange: true },
      AbortSignal.any([controller.signal, lifetime.signal]),
    );
    runner.on('answer', (a) => {
      const event = {
        type: 'watch-event',
        t: a.wallMs,
        text: a.text,
        changed: a.trigger !== 'interval',
        trigger: a.trigger,
        meanAbsDiff: a.diff.meanAbsDiff,
        latencyMs: deps.clock.monotonicMs() - a.capturedAtMs,
        dropped: runner.framesDropped,
        thumbnail: `data:image/png;base64,${a.thumbnail.toString('base64')}`,
      };
      send(event);
      deps.publish?.({ ...event, source: 'dashboard' });
    });
    runner.on('error', (e) => send({ type: 'error', message: e.message }));
    watch = { runner, frames, controller };
  };

  const handle = async (data: RawData, isBinary: boolean) => {
    const bytes = toBuffer(data);
    if (isBinary) {
      const header = expecting;
      expecting = undefined;
      if (!header)
        throw new WorkloadError('EFRAME', 'Binary frame without a preceding "ask" or "frame" message');
      if (bytes.length !== header.bytes) {
        throw new WorkloadError(
          'EFRAME',
          `Image is ${bytes.length} bytes but the message announced ${header.bytes}`,
        );
      }
      if (header.kind === 'ask') return ask(header.question, bytes);
      if (!watch) throw new WorkloadError('EFRAME', 'Frame sent while not watching: send "watch" first');
      watch.frames.push({ frame: await decodeImage(bytes), atMs: deps.clock.monotonicMs() });
      return;
    }
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
        const size = positiveInt(m['bytes'], 'ask.bytes');
        if (size > maxBytes)
          throw new WorkloadError(
            'EFRAME',
            `Image of ${size} bytes exceeds ${maxBytes} bytes (vision.maxFrameBytes)`,
          );
        expecting = { kind: 'ask', question: m['question'], bytes: size };
        return;
      }
      case 'frame': {
        const size = positiveInt(m['bytes'], 'frame.bytes');
        if (size > maxBytes)
          throw new WorkloadError(
            'EFRAME',
            `Image of ${size} bytes exceeds ${maxBytes} bytes (vision.maxFrameBytes)`,
          );
        expecting = { kind: 'frame', bytes: size };
        return;
      }
      case 'watch': {
        const prompt =
          typeof m['prompt'] === 'string' && m['prompt'].trim()
            ? m['prompt']
            : deps.vision.config.watch.prompt;
        const intervalMs =
          m['intervalMs'] === undefined
            ? deps.vision.config.watch.intervalS * 1000
            : positiveInt(m['intervalMs'], 'watch.intervalMs');
        startWatch(prompt, intervalMs);
        return;
      }
      case 'unwatch':
        stopWatch();
        return;
      default:
        throw new WorkloadError(
          'EFRAME',
          `Unknown message type ${JSON.stringify(m['type'])} (expected ask, frame, watch, unwatch)`,
        );
    }
  };

  ws.on('message', (data, isBinary) => {
    if (!rate.take()) {
      ws.close(WS_CLOSE.rateLimited, rate.describe().slice(0, 120));
      return;
    }
    chain = chain
      .then(() => handle(data, isBinary))
      .catch((err: unknown) => {
        const code = (err as { code?: unknown }).code;
        send({ type: 'error', ...(typeof code === 'string' ? { code } : {}), message: errorMessage(err) });
      });
  });
  ws.on('close', () => {
    stopWatch();
    lifetime.abort(new WorkloadError('ECANCELLED', 'vision socket closed'));
    void chain.finally(release);
  });
  send({ type: 'ready' });
}
