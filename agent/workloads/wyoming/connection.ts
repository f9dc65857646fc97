// One Wyoming client connection: its events in order, each role's flow as the protocol's README lays it out.
//
//   describe                                   → info (what serves now)
//   transcribe?, audio-start, audio-chunk…, audio-stop
//                                              → transcript-start, transcript-chunk…, transcript, transcript-stop
//   synthesize                                 → audio-start, audio-chunk…, audio-stop (one group per sentence)
//   synthesize-start, synthesize-chunk…, synthesize (ignored: sent for old servers), synthesize-stop
//                                              → audio groups as sentences complete, then synthesize-stopped
//   transcript (to the handle program)         → handled-start, handled-chunk…, handled, handled-stop
//   detect, audio-start, audio-chunk…, audio-stop
//                                              → detection {name, timestamp} per wake word heard, else not-detected
//   ping                                       → pong
// Audio chunks are converted as they arrive; the model work (ASR, TTS, the reply) runs as jobs one after another,
// so answers keep the order of the requests while new events are still read. A new `transcribe` or the client
// closing cancels every job of the connection (the engine stops within a decode step, espeak-ng is killed), as
// speech over a reply does in a dashboard session. Errors answer with `error` {text, code}; the connection stays.
// Event types this server does not serve are ignored, as the protocol asks.
//
// This file is the dispatcher: it routes each event to its flow (transcribe.ts, detect.ts, synthesize.ts,
// handle.ts), runs their jobs in order, and holds the live-session claim while any flow waits for more input.
import { errorMessage } from '../../../lib/errors.js';
import { isAbort, WorkloadError } from '../shared/errors.js';
import type { WyomingEvent } from './codec.js';
import { DetectFlow } from './detect.js';
import type { FlowHost, WyomingConnectionDeps } from './flow.js';
import { HandleFlow } from './handle.js';
import { buildInfo } from './info.js';
import { WyomingSessionClaim } from './session-claim.js';
import { SynthesizeFlow } from './synthesize.js';
import { TranscribeFlow } from './transcribe.js';

export type { WyomingConnectionDeps } from './flow.js';

/** Jobs waiting behind the running one; beyond this a request is refused instead of queued. */
const MAX_PENDING_JOBS = 32;

export class WyomingConnection {
  readonly #d: WyomingConnectionDeps;
  #controller = new AbortController();
  #jobs: Promise<void> = Promise.resolve();
  #pending = 0;
  #closed = false;
  readonly #claim: WyomingSessionClaim;
  readonly #transcribe: TranscribeFlow;
  readonly #detect: DetectFlow;
  readonly #synthesize: SynthesizeFlow;
  readonly #handle: HandleFlow;

  constructor(deps: WyomingConnectionDeps) {
    this.#d = deps;
    this.#claim = new WyomingSessionClaim(
      deps.sessions,
      deps.refuse ?? ((code, text) => void deps.send({ type: 'error', data: { text, code } })),
    );
    const host: FlowHost = {
      deps,
      enqueue: (job) => this.#enqueue(job),
      error: (err) => this.#error(err),
      settled: () => this.#endSessionIfIdle(),
    };
    this.#transcribe = new TranscribeFlow(host);
    this.#detect = new DetectFlow(host);
    this.#synthesize = new SynthesizeFlow(host);
    this.#handle = new HandleFlow(host);
  }

  /** Whether model work is running or queued (the idle timeout does not apply then). */
  get busy(): boolean {
    return this.#pending > 0;
  }

  /** Resolves when every job so far has finished (and the last wake-word stream was answered). */
  async idle(): Promise<void> {
    await this.#detect.stopped;
    for (let jobs = this.#jobs; ; jobs = this.#jobs) {
      await jobs;
      if (jobs === this.#jobs) return;
    }
  }

  /** The role whose live session this connection claims now, if any. */
  readonly sessionRole = (): string | undefined => this.#claim.role;

  /** The client went away: its work is cancelled; the live session is given back once the jobs have ended. */
  close(): void {
    this.#closed = true;
    this.#controller.abort(new WorkloadError('ECANCELLED', 'the Wyoming client closed the connection'));
    this.#endSessionIfIdle();
  }

  /** One event from the client, in order. */
  handle(event: WyomingEvent): void {
    if (this.#claim.refused) return;
    try {
      if (this.#claim.takeFor(event.type)) this.#dispatch(event);
    } catch (err) {
      void this.#error(err);
    }
    this.#endSessionIfIdle();
  }

  /** Gives the slot back once nothing of the connection's runs or waits for more input. */
  #endSessionIfIdle(): void {
    const waiting = // for more input of a flow that was not refused
      !this.#closed && (this.#transcribe.waiting || this.#synthesize.waiting || this.#detect.waiting);
    this.#claim.releaseUnless(waiting || this.#pending > 0);
  }

  #dispatch(e: WyomingEvent): void {
    switch (e.type) {
      case 'describe':
        void this.#d.send({ type: 'info', data: this.#info() });
        return;
      case 'ping':
        void this.#d.send({
          type: 'pong',
          data: typeof e.data['text'] === 'string' ? { text: e.data['text'] } : {},
        });
        return;
      case 'transcribe':
        this.#cancel('a new transcribe request');
        this.#transcribe.ask();
        return;
      case 'detect':
        this.#detect.detect(e);
        return;
      // After `detect` the audio stream is the wake word's; otherwise it is speech to text.
      case 'audio-start':
        if (this.#detect.active) this.#detect.start(e);
        else this.#transcribe.start(e);
        return;
      case 'audio-chunk':
        if (this.#detect.active) this.#detect.chunk(e);
        else this.#transcribe.chunk(e);
        return;
      case 'audio-stop':
        if (this.#detect.active) this.#detect.stop();
        else this.#transcribe.stop();
        return;
      case 'synthesize':
        this.#synthesize.synthesize(e);
        return;
      case 'synthesize-start':
        this.#synthesize.start();
        return;
      case 'synthesize-chunk':
        this.#synthesize.chunk(e);
        return;
      case 'synthesize-stop':
        this.#synthesize.stop();
        return;
      case 'transcript':
        this.#handle.transcript(e);
        return;
      default:
        this.#d.logger.debug('ignoring a Wyoming event this server does not serve', { type: e.type });
    }
  }

  #info(): Record<string, unknown> {
    return buildInfo(this.#d.voice.roles(), {
      languages: this.#d.languages,
      agentVersion: this.#d.agentVersion,
    });
  }

  // ---------------------------------------------------------------------------------------- jobs

  #enqueue(job: (signal: AbortSignal) => Promise<void>): void {
    if (this.#pending >= MAX_PENDING_JOBS) {
      throw new WorkloadError(
        'EBUSY',
        `Too many requests waiting on this connection (${this.#pending}); wait for the answers before sending more`,
      );
    }
    const signal = this.#controller.signal;
    this.#pending++;
    this.#jobs = this.#jobs
      .then(async () => {
        if (signal.aborted || this.#closed) return;
        this.#d.priority?.begin();
        try {
          await job(signal);
        } finally {
          this.#d.priority?.end();
        }
      })
      .catch((err: unknown) => {
        if (signal.aborted || isAbort(err)) return;
        return this.#error(err);
      })
      .finally(() => {
        this.#pending--;
        this.#endSessionIfIdle();
      });
  }

  #cancel(why: string): void {
    if (this.#pending === 0) return;
    this.#controller.abort(new WorkloadError('ECANCELLED', `cancelled by ${why}`));
    this.#controller = new AbortController();
  }

  async #error(err: unknown): Promise<void> {
    const code = (err as { code?: unknown }).code;
    await this.#d.send({
      type: 'error',
      data: { text: errorMessage(err), code: typeof code === 'string' ? code : 'EINTERNAL' },
    });
  }
}
