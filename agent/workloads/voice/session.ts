// A voice session's front: the microphone's audio framed for the VAD, utterances cut by the segmenter, turns
// started one after another, and barge-in (speech over a reply, or push-to-talk, cancels it). The work of a turn,
// from ASR to the stored turn, is the turn runner's (turn-runner.ts).
import { errorMessage } from '../../../lib/errors.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import { dbfs, PIPELINE_RATE, rms } from '../audio/pcm.js';
import { VAD_FRAME_MS, VAD_FRAME_SAMPLES } from '../audio/vad.js';
import type { ChatMessage } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import { type SegmenterEvent, type Utterance, UtteranceSegmenter } from './segmenter.js';
import type { VoiceEvents, VoiceSessionOptions, VoiceSessionStats } from './session-types.js';
import { type ActiveTurn, TurnRunner } from './turn-runner.js';

export type { TurnStatus, VoiceEvents, VoiceSessionOptions, VoiceSessionStats } from './session-types.js';
export { handoverOf } from './turn-runner.js';

export class VoiceSession extends TypedEventEmitter<VoiceEvents> {
  readonly id: string;
  readonly #o: VoiceSessionOptions;
  readonly #segmenter: UtteranceSegmenter;
  readonly #runner: TurnRunner;
  readonly #history: ChatMessage[] = [];
  #frame = new Float32Array(VAD_FRAME_SAMPLES);
  #frameFill = 0;
  #vadChain: Promise<void> = Promise.resolve();
  #backlog = 0;
  #turnCounter = 0;
  #active: ActiveTurn | undefined;
  #playbackUntil = 0;
  #playbackDb = -120;
  #speechRunMs = 0;
  #ptt: Float32Array[] | undefined;
  #closed = false;
  readonly stats: VoiceSessionStats = { turns: 0, framesDropped: 0, framesGated: 0, utterancesIgnored: 0 };

  constructor(options: VoiceSessionOptions) {
    super();
    if (!options.asr && !options.reply.audioIn) {
      throw new WorkloadError(
        'ENOMODEL',
        'A voice session needs an ASR stage or a reply model that takes audio (omni)',
      );
    }
    this.id = options.id;
    this.#o = options;
    this.#segmenter = new UtteranceSegmenter(options.segmenter);
    this.#runner = new TurnRunner({
      id: this.id,
      options,
      history: this.#history,
      stats: this.stats,
      emit: (event, payload) => this.emit(event, payload),
      played: (samples, chunkMs, now) => {
        this.#playbackUntil = Math.max(now, this.#playbackUntil) + chunkMs;
        this.#playbackDb = dbfs(rms(samples));
      },
    });
  }

  get busy(): boolean {
    return this.#active !== undefined;
  }

  /** Whether the client is (by our account) still playing the reply. */
  get playing(): boolean {
    return this.#o.clock.monotonicMs() < this.#playbackUntil;
  }

  /**
   * 16 kHz mono float samples from the microphone, any chunk size. Returns false when the VAD is behind by more
   * than its backlog limit: a live source drops (counted in stats), a file source should await drained().
   */
  pushAudio(samples: Float32Array): boolean {
    if (this.#closed) throw new WorkloadError('ESTATE', `Voice session ${this.id} is closed`);
    if (this.#ptt) {
      this.#ptt.push(samples.slice());
      return true;
    }
    if (this.#o.mode !== 'vad') return true;
    let at = 0;
    while (at < samples.length) {
      const n = Math.min(VAD_FRAME_SAMPLES - this.#frameFill, samples.length - at);
      this.#frame.set(samples.subarray(at, at + n), this.#frameFill);
      this.#frameFill += n;
      at += n;
      if (this.#frameFill === VAD_FRAME_SAMPLES) {
        this.#enqueueFrame(this.#frame);
        this.#frame = new Float32Array(VAD_FRAME_SAMPLES);
        this.#frameFill = 0;
      }
    }
    return this.#backlog < this.#backlogLimit;
  }

  /** Resolves when every frame pushed so far has been through the VAD. */
  async drained(): Promise<void> {
    for (let chain = this.#vadChain; ; chain = this.#vadChain) {
      await chain;
      if (chain === this.#vadChain) return;
    }
  }

  get #backlogLimit(): number {
    return this.#o.maxVadBacklogFrames ?? 256;
  }

  /** End of the input stream (a WAV file ran out): a running utterance ends here. Resolves when VAD caught up. */
  async endOfInput(): Promise<void> {
    if (this.#frameFill > 0) {
      this.#frame.fill(0, this.#frameFill);
      this.#enqueueFrame(this.#frame);
      this.#frame = new Float32Array(VAD_FRAME_SAMPLES);
      this.#frameFill = 0;
    }
    await this.drained();
    this.#handleSegments(this.#segmenter.flush());
  }

  /**
   * Forgets audio not yet part of a turn: the partial frame, an utterance in progress, the VAD's state. The wake
   * gate calls it when it stops listening, so speech cut off there never joins the next request.
   */
  async discardInput(): Promise<void> {
    await this.drained();
    this.#frame = new Float32Array(VAD_FRAME_SAMPLES);
    this.#frameFill = 0;
    this.#speechRunMs = 0;
    this.#segmenter.reset();
    this.#o.vad.reset();
  }

  /** Push-to-talk: start collecting a request (interrupting a reply). */
  pushToTalkStart(): void {
    this.#ptt = [];
    this.#o.tts.prepare?.();
    if (this.#active) this.#bargeIn();
  }

  /** Push-to-talk: the request is complete; it becomes a turn. */
  pushToTalkEnd(): void {
    const parts = this.#ptt;
    this.#ptt = undefined;
    if (!parts) throw new WorkloadError('ESTATE', 'push-to-talk end without a start');
    const total = parts.reduce((n, p) => n + p.length, 0);
    const samples = new Float32Array(total);
    let at = 0;
    for (const p of parts) {
      samples.set(p, at);
      at += p.length;
    }
    this.#startTurn({ startSample: 0, endSample: total, samples, endedBy: 'flush' });
  }

  /**
   * Speaks `text` as the assistant, without ASR or the LLM: a turn of its own (interrupting a reply, cancelled by
   * barge-in like one) that ends with `turn-end`. Not part of the conversation history, not stored as a turn.
   */
  say(text: string): void {
    if (text.trim().length === 0) throw new WorkloadError('ESTATE', 'say.text is empty');
    this.#startTurnWith((active) => this.#runner.runSay(active, text));
  }

  /** The client says its playback queue ran dry (or it dropped it). */
  playbackDone(): void {
    this.#playbackUntil = 0;
  }

  /** Waits for the running turn (if any) to finish. */
  async idle(): Promise<void> {
    await this.drained();
    while (this.#active) await this.#active.done;
  }

  /** Clears the conversation history (the system prompt stays). */
  resetHistory(): void {
    this.#history.length = 0;
  }

  get history(): readonly ChatMessage[] {
    return this.#history;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#o.onClose?.();
    this.#active?.controller.abort(new WorkloadError('ECANCELLED', 'voice session closed'));
    await this.#vadChain.catch(() => {});
    await this.#active?.done;
    this.#o.tts.dispose?.();
    await this.#o.vad.dispose();
  }

  #enqueueFrame(frame: Float32Array): void {
    if (this.#backlog >= this.#backlogLimit) {
      this.stats.framesDropped++;
      return;
    }
    this.#backlog++;
    this.#vadChain = this.#vadChain
      .then(() => this.#processFrame(frame))
      .catch((err: unknown) => {
        // A VAD failure must not wedge the chain; the session reports it as a failed (empty) turn.
        this.emit('turn-end', {
          turn: this.#turnCounter,
          status: 'failed',
          transcript: undefined,
          reply: '',
          metrics: { speechMs: 0 },
          error: `VAD failed: ${errorMessage(err)}`,
        });
      })
      .finally(() => {
        this.#backlog--;
      });
  }

  async #processFrame(frame: Float32Array): Promise<void> {
    if (this.#closed) return;
    let probability: number;
    const gated =
      this.#o.duplex === 'half' &&
      this.playing &&
      dbfs(rms(frame)) - this.#playbackDb < this.#o.bargeInMarginDb;
    if (gated) {
      // Our own voice coming back: treated as silence, so it neither starts nor prolongs an utterance.
      this.stats.framesGated++;
      probability = 0;
    } else {
      probability = await this.#o.vad.process(frame);
    }
    this.#handleSegments(this.#segmenter.push(frame, probability));
    if (this.#segmenter.inSpeech && !gated) {
      this.#speechRunMs += VAD_FRAME_MS;
      const interrupting = this.#active !== undefined || this.playing;
      if (interrupting && this.#o.bargeIn && this.#speechRunMs >= this.#o.bargeInMinSpeechMs) this.#bargeIn();
    } else {
      this.#speechRunMs = 0;
    }
  }

  #handleSegments(events: SegmenterEvent[]): void {
    for (const e of events) {
      if (e.type === 'speech-start') {
        this.#o.tts.prepare?.(); // while the user speaks: starting espeak-ng holds this thread for ms
        this.emit('speech-start', { atMs: (e.atSample / PIPELINE_RATE) * 1000 });
      } else if (e.type === 'discarded') this.emit('speech-discarded', { reason: e.reason });
      else if (this.#active && !this.#o.bargeIn) this.stats.utterancesIgnored++;
      else this.#startTurn(e.utterance);
    }
  }

  #bargeIn(): void {
    const active = this.#active;
    if (!active) {
      // The reply's work is done but the client is still playing it: only the playback has to stop.
      if (this.playing) {
        this.#playbackUntil = 0;
        this.emit('barge-in', { turn: this.#turnCounter });
      }
      return;
    }
    if (active.bargeInAt !== undefined) return;
    active.bargeInAt = this.#o.clock.monotonicMs();
    this.#playbackUntil = 0;
    this.emit('barge-in', { turn: active.turn });
    active.controller.abort(new WorkloadError('ECANCELLED', 'barge-in: the user spoke during the reply'));
  }

  #startTurn(utterance: Utterance): void {
    this.#startTurnWith((active) => this.#runner.runTurn(active, utterance));
  }

  #startTurnWith(run: (active: ActiveTurn) => Promise<void>): void {
    const previous = this.#active;
    if (previous) this.#bargeIn();
    const turn = ++this.#turnCounter;
    const controller = new AbortController();
    const active: ActiveTurn = { turn, controller, done: Promise.resolve() };
    active.done = (async () => {
      // Turns never overlap: the interrupted one releases the models first.
      await previous?.done;
      await run(active);
    })();
    this.#active = active;
    void active.done.finally(() => {
      if (this.#active === active) this.#active = undefined;
    });
  }
}
