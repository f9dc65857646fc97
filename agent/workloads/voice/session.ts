import { errorMessage } from '../../../lib/errors.js';
import { TypedEventEmitter } from '../../../lib/typed-events.js';
import { dbfs, PIPELINE_RATE, rms } from '../audio/pcm.js';
import { VAD_FRAME_MS, VAD_FRAME_SAMPLES } from '../audio/vad.js';
import type { ChatMessage, ChatResult } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import { trimHistory } from '../shared/history.js';
import { type SegmenterEvent, type Utterance, UtteranceSegmenter } from './segmenter.js';
import { type SpeechQueue, startSpeechQueue } from './speech-queue.js';
import { checkUtterance, SentenceChunker } from './stages.js';
import type { TurnMetrics } from './turn-store.js';

export type { TurnStatus, VoiceEvents, VoiceSessionOptions, VoiceSessionStats } from './session-types.js';

import type { TurnStatus, VoiceEvents, VoiceSessionOptions, VoiceSessionStats } from './session-types.js';

class NothingHeard extends Error {}

/** The reply's counts, its KV reuse and the hand-overs, once it has ended. */
function resultMetrics(metrics: TurnMetrics, result: ChatResult): void {
  metrics.promptTokens = result.promptTokens;
  metrics.generatedTokens = result.generatedTokens;
  if (result.decodeMs > 0) metrics.tokensPerSec = (result.generatedTokens / result.decodeMs) * 1000;
  if (result.reuse) {
    metrics.kvReusedTokens = result.reuse.reusedTokens;
    const { outcome, reason, route, context } = result.reuse;
    const contextUsed = route !== undefined && route !== 'only' ? ` · context ${context ?? 0} ${route}` : '';
    metrics.kvReuse = `${reason === null ? outcome : `${outcome} (${reason})`}${contextUsed}`;
  }
  handoverOf(metrics);
}

/** End of speech → first audio less the stages' own parts (ASR, LLM TTFT, first sentence, its first TTS chunk). */
export function handoverOf(m: TurnMetrics): void {
  if (m.ttfaMs === undefined || m.llmTtftMs === undefined || m.ttsFirstMs === undefined) return;
  const own = (m.asrMs ?? 0) + m.llmTtftMs + (m.sentenceMs ?? 0) + m.ttsFirstMs;
  m.handoverMs = Math.max(0, m.ttfaMs - own);
}

interface ActiveTurn {
  turn: number;
  controller: AbortController;
  done: Promise<void>;
  bargeInAt?: number;
}

export class VoiceSession extends TypedEventEmitter<VoiceEvents> {
  readonly id: string;
  readonly #o: VoiceSessionOptions;
  readonly #segmenter: UtteranceSegmenter;
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
    this.#startTurnWith((active) => this.#runSay(active, text));
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
    this.#startTurnWith((active) => this.#runTurn(active, utterance));
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

  async #runTurn(active: ActiveTurn, utterance: Utterance): Promise<void> {
    const { clock } = this.#o;
    const signal = active.controller.signal;
    const speechMs = (utterance.samples.length / PIPELINE_RATE) * 1000;
    const startedAt = clock.nowMs();
    const t0 = clock.monotonicMs();
    const metrics: TurnMetrics = {
      speechMs,
      ...(utterance.decisionMs !== undefined ? { vadEndMs: utterance.decisionMs } : {}),
    };
    let transcript: string | undefined;
    let reply = '';
    let status: TurnStatus = 'completed';
    let error: string | undefined;
    let finishReason: ChatResult['finishReason'] | undefined;
    this.stats.turns++;
    this.emit('speech-end', { turn: active.turn, speechMs, endedBy: utterance.endedBy });
    this.#o.priority?.begin();
    try {
      signal.throwIfAborted();
      checkUtterance(utterance.samples);
      let userContent: string;
      if (this.#o.asr) {
        const asr = await this.#o.asr.transcribe(utterance.samples, signal);
        metrics.asrMs = clock.monotonicMs() - t0;
        metrics.asrRtf = metrics.asrMs / speechMs;
        transcript = asr.text;
        this.emit('transcript', { turn: active.turn, text: transcript });
        userContent = transcript;
        // Nothing intelligible (a door, a cough the VAD let through): no reply rather than a reply to nothing.
        if (transcript.length === 0) throw new NothingHeard();
      } else {
        userContent = '(spoken request in the attached audio)';
      }
      signal.throwIfAborted();
      const history: ChatMessage[] = [
        { role: 'system', content: this.#o.systemPrompt },
        ...this.#history,
        { role: 'user', content: userContent },
      ];
      const requestedAt = clock.monotonicMs();
      const stream = this.#o.reply.reply({
        history,
        ...(this.#o.reply.audioIn ? { audio: utterance.samples } : {}),
        signal,
      });
      const speech = this.#speak(active, signal, metrics, t0);
      try {
        reply = await this.#streamReply(active.turn, stream, speech, metrics, { t0, requestedAt });
      } finally {
        speech.end();
      }
      await speech.finished;
      const result = await stream.result;
      signal.throwIfAborted();
      finishReason = result.finishReason;
      if (finishReason === 'backend-lost') error = `reply cut short: ${result.detail ?? 'host lost'}`;
      resultMetrics(metrics, result);
      this.#remember({ role: 'user', content: userContent }, { role: 'assistant', content: reply });
    } catch (err) {
      if (err instanceof NothingHeard) {
        // completed, with an empty reply
      } else if (signal.aborted) {
        status = 'cancelled';
        error = errorMessage(signal.reason);
      } else {
        status = 'failed';
        error = errorMessage(err);
      }
    } finally {
      this.#o.priority?.end();
    }
    if (active.bargeInAt !== undefined) metrics.bargeInMs = clock.monotonicMs() - active.bargeInAt;
    try {
      this.#o.sink?.record({
        sessionId: this.id,
        turn: active.turn,
        startedAt,
        status,
        transcript,
        reply,
        metrics,
        ...(error !== undefined ? { error } : {}),
      });
    } catch (err) {
      // A full disk must not end the conversation; the turn still ends, saying what was lost.
      error = `${error ? `${error}; ` : ''}turn not stored: ${errorMessage(err)}`;
    }
    this.emit('turn-end', {
      turn: active.turn,
      status,
      transcript,
      reply,
      metrics,
      ...(finishReason !== undefined ? { finishReason } : {}),
      ...(error !== undefined ? { error } : {}),
    });
  }

  /**
   * The reply's pieces as they come: each goes out as a `reply-delta`, and each sentence (or first clause) to the
   * speech queue at once, while the LLM goes on decoding. Fills the LLM's and the first sentence's timings.
   */
  async #streamReply(
    turn: number,
    stream: AsyncIterable<string>,
    speech: SpeechQueue,
    metrics: TurnMetrics,
    at: { t0: number; requestedAt: number },
  ): Promise<string> {
    const { clock } = this.#o;
    const chunker = new SentenceChunker();
    let reply = '';
    let firstTokenAt: number | undefined;
    for await (const piece of stream) {
      if (firstTokenAt === undefined) {
        firstTokenAt = clock.monotonicMs();
        metrics.ttftMs = firstTokenAt - at.t0;
        metrics.llmTtftMs = firstTokenAt - at.requestedAt;
      }
      reply += piece;
      this.emit('reply-delta', { turn, text: piece });
      for (const s of chunker.push(piece)) {
        if (metrics.sentenceMs === undefined) metrics.sentenceMs = clock.monotonicMs() - firstTokenAt;
        speech.say(s);
      }
    }
    if (metrics.sentenceMs === undefined && firstTokenAt !== undefined)
      metrics.sentenceMs = clock.monotonicMs() - firstTokenAt;
    for (const s of chunker.flush()) speech.say(s);
    return reply;
  }

  async #runSay(active: ActiveTurn, text: string): Promise<void> {
    const signal = active.controller.signal;
    const t0 = this.#o.clock.monotonicMs();
    const metrics: TurnMetrics = { speechMs: 0 };
    let status: TurnStatus = 'completed';
    let error: string | undefined;
    this.#o.priority?.begin();
    try {
      signal.throwIfAborted();
      const speech = this.#speak(active, signal, metrics, t0);
      const chunker = new SentenceChunker();
      for (const s of [...chunker.push(text), ...chunker.flush()]) speech.say(s);
      speech.end();
      await speech.finished;
      signal.throwIfAborted();
    } catch (err) {
      status = signal.aborted ? 'cancelled' : 'failed';
      error = errorMessage(signal.aborted ? signal.reason : err);
    } finally {
      this.#o.priority?.end();
    }
    this.emit('turn-end', {
      turn: active.turn,
      status,
      transcript: undefined,
      reply: text,
      metrics,
      ...(error !== undefined ? { error } : {}),
    });
  }

  /** The turn's speech out: chunks become `audio` events and move the playback estimate (half duplex). */
  #speak(active: ActiveTurn, signal: AbortSignal, metrics: TurnMetrics, t0: number): SpeechQueue {
    let seq = 0;
    return startSpeechQueue({
      tts: this.#o.tts,
      clock: this.#o.clock,
      signal,
      metrics,
      t0,
      onChunk: (chunk, chunkMs, now) => {
        this.#playbackUntil = Math.max(now, this.#playbackUntil) + chunkMs;
        this.#playbackDb = dbfs(rms(chunk.samples));
        this.emit('audio', {
          turn: active.turn,
          seq: seq++,
          sampleRate: chunk.sampleRate,
          samples: chunk.samples,
        });
      },
    });
  }

  #remember(user: ChatMessage, assistant: ChatMessage): void {
    this.#history.push(user, assistant);
    trimHistory(this.#history, this.#o.maxHistoryMessages);
  }
}
