// A voice session's turn runner: one turn from its utterance to `turn-end` (ASR, the reply streamed sentence by
// sentence into speech, the turn stored), and `say` turns that only speak. The session (session.ts) is the front:
// it frames the microphone, runs the VAD, starts turns and barges in on them; this file does the work of a turn
// once started and hands back only events, the playback estimate and the conversation history.
import { errorMessage } from '../../../lib/errors.js';
import { PIPELINE_RATE } from '../audio/pcm.js';
import type { ChatMessage, ChatResult } from '../shared/chat-model.js';
import { trimHistory } from '../shared/history.js';
import type { AssistantEvent } from '../tools/assistant.js';
import type { ToolCallRecord } from '../tools/run-call.js';
import type { Utterance } from './segmenter.js';
import type { TurnStatus, VoiceEvents, VoiceSessionOptions, VoiceSessionStats } from './session-types.js';
import { type SpeechQueue, startSpeechQueue } from './speech-queue.js';
import { checkUtterance, SentenceChunker } from './stages.js';
import type { TurnMetrics } from './turn-store.js';

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

/** The turn the session runs now: the runner's work is cancelled through its controller (barge-in, close). */
export interface ActiveTurn {
  turn: number;
  controller: AbortController;
  done: Promise<void>;
  bargeInAt?: number;
}

/** The session, as its turns see it. */
export interface TurnHost {
  readonly id: string;
  readonly options: VoiceSessionOptions;
  /** The conversation so far (the system prompt aside); a completed turn appends to it. */
  readonly history: ChatMessage[];
  readonly stats: VoiceSessionStats;
  emit<K extends keyof VoiceEvents & string>(event: K, payload: VoiceEvents[K]): void;
  /** A chunk of reply audio went out at `now`, lasting `chunkMs`: the playback estimate moves (half duplex). */
  played(samples: Float32Array, chunkMs: number, now: number): void;
}

export class TurnRunner {
  readonly #h: TurnHost;
  readonly #o: VoiceSessionOptions;

  constructor(host: TurnHost) {
    this.#h = host;
    this.#o = host.options;
  }

  async runTurn(active: ActiveTurn, utterance: Utterance): Promise<void> {
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
    let toolCalls: ToolCallRecord[] | undefined;
    this.#h.stats.turns++;
    this.#h.emit('speech-end', { turn: active.turn, speechMs, endedBy: utterance.endedBy });
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
        this.#h.emit('transcript', { turn: active.turn, text: transcript });
        userContent = transcript;
        // Nothing intelligible (a door, a cough the VAD let through): no reply rather than a reply to nothing.
        if (transcript.length === 0) throw new NothingHeard();
      } else {
        userContent = '(spoken request in the attached audio)';
      }
      signal.throwIfAborted();
      const history: ChatMessage[] = [
        { role: 'system', content: this.#o.systemPrompt },
        ...this.#h.history,
        { role: 'user', content: userContent },
      ];
      const requestedAt = clock.monotonicMs();
      const stream = this.#o.reply.reply({
        history,
        ...(this.#o.reply.audioIn ? { audio: utterance.samples } : {}),
        signal,
        onToolEvent: (e) => this.#toolEvent(active.turn, e),
      });
      const speech = this.#speak(active, signal, metrics, t0);
      try {
        reply = await this.#streamReply(active.turn, stream, speech, metrics, { t0, requestedAt });
      } finally {
        speech.end();
      }
      await speech.finished;
      const result = await stream.result;
      toolCalls = (await stream.turn)?.calls;
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
        sessionId: this.#h.id,
        turn: active.turn,
        startedAt,
        status,
        transcript,
        reply,
        metrics,
        ...(error !== undefined ? { error } : {}),
        ...(toolCalls && toolCalls.length > 0 ? { toolCalls } : {}),
      });
    } catch (err) {
      // A full disk must not end the conversation; the turn still ends, saying what was lost.
      error = `${error ? `${error}; ` : ''}turn not stored: ${errorMessage(err)}`;
    }
    this.#h.emit('turn-end', {
      turn: active.turn,
      status,
      transcript,
      reply,
      metrics,
      ...(finishReason !== undefined ? { finishReason } : {}),
      ...(error !== undefined ? { error } : {}),
      ...(toolCalls && toolCalls.length > 0 ? { toolCalls } : {}),
    });
  }

  /** The acting assistant's calls and results as the session's events (the Voice page shows them live). */
  #toolEvent(turn: number, e: AssistantEvent): void {
    if (e.type === 'tool_call')
      this.#h.emit('tool-call', { turn, id: e.id, name: e.name, arguments: e.arguments });
    else if (e.type === 'tool_result')
      this.#h.emit('tool-result', { turn, id: e.id, name: e.name, ok: e.ok, content: e.content, ms: e.ms });
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
      this.#h.emit('reply-delta', { turn, text: piece });
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

  async runSay(active: ActiveTurn, text: string): Promise<void> {
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
    this.#h.emit('turn-end', {
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
        this.#h.played(chunk.samples, chunkMs, now);
        this.#h.emit('audio', {
          turn: active.turn,
          seq: seq++,
          sampleRate: chunk.sampleRate,
          samples: chunk.samples,
        });
      },
    });
  }

  #remember(user: ChatMessage, assistant: ChatMessage): void {
    this.#h.history.push(user, assistant);
    trimHistory(this.#h.history, this.#o.maxHistoryMessages);
  }
}
