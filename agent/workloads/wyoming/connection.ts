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
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { ChatMessage } from '../shared/chat-model.js';
import { isAbort, WorkloadError } from '../shared/errors.js';
import type { VoiceService } from '../voice/service.js';
import { SentenceChunker } from '../voice/stages.js';
import { type WyomingAudioFormat, WyomingAudioIn, WyomingAudioOut, wyomingAudioFormat } from './audio.js';
import type { WyomingEvent } from './codec.js';
import type { ConversationHistories } from './conversations.js';
import { checkTextLength, outFormat, sendAudio, textField } from './event-fields.js';
import { buildInfo } from './info.js';
// The class is WyomingSessionClaim; the alias keeps this file's body as it was (being split in h44-split).
import { type SessionSource, WyomingSessionClaim as WyomingSessionSlot } from './session-claim.js';
import { WakeDetectRun } from './wake-detect.js';

export interface WyomingConnectionDeps {
  voice: Pick<VoiceService, 'roles' | 'asrStage' | 'replyStage' | 'ttsStage' | 'wakeStream'>;
  conversations: ConversationHistories;
  systemPrompt: string;
  languages: readonly string[];
  agentVersion: string;
  maxTextChars: number;
  maxAudioSeconds: number;
  asr: { instruction: string; maxNewTokens: number };
  /** A voice turn is running: vision's watch mode yields the SoC (the dashboard sessions' priority). */
  priority?: { begin(): void; end(): void };
  /** Writes one event; resolves when the socket can take more (so audio out is paced by the client). */
  send(event: WyomingEvent): Promise<void>;
  /** The agent's shared session slots (session-slot.ts); undefined: no limit. */
  sessions?: SessionSource;
  /** All slots were taken: says so with an `error` event (code, retry hint) and closes the connection. */
  refuse?(code: string, text: string): void;
  logger: Logger;
}

/** The rate announced for an audio stream that has no chunks (espeak-ng's). */
const EMPTY_STREAM_RATE = 22050;

/** Jobs waiting behind the running one; beyond this a request is refused instead of queued. */
const MAX_PENDING_JOBS = 32;

type Capture = { audio: WyomingAudioIn; format: WyomingAudioFormat } | { refused: true };

export class WyomingConnection {
  readonly #d: WyomingConnectionDeps;
  readonly #connectionConversation = randomUUID();
  #controller = new AbortController();
  #jobs: Promise<void> = Promise.resolve();
  #pending = 0;
  #capture: Capture | undefined;
  #transcribeAsked = false;
  #synthStream: { chunker: SentenceChunker; chars: number; refused: boolean } | undefined;
  /** After `detect`: the audio stream that follows is for the wake word, not speech to text. */
  #wake: WakeDetectRun | { refused: true } | undefined;
  /** The last wake run's audio-stop (scoring what is left, then not-detected). */
  #wakeStopped: Promise<void> = Promise.resolve();
  #wakeStopping = false;
  #closed = false;
  readonly #slot: WyomingSessionSlot;

  constructor(deps: WyomingConnectionDeps) {
    this.#d = deps;
    this.#slot = new WyomingSessionSlot(
      deps.sessions,
      deps.refuse ?? ((code, text) => void deps.send({ type: 'error', data: { text, code } })),
    );
  }

  /** Whether model work is running or queued (the idle timeout does not apply then). */
  get busy(): boolean {
    return this.#pending > 0;
  }

  /** Resolves when every job so far has finished (and the last wake-word stream was answered). */
  async idle(): Promise<void> {
    await this.#wakeStopped;
    for (let jobs = this.#jobs; ; jobs = this.#jobs) {
      await jobs;
      if (jobs === this.#jobs) return;
    }
  }

  /** The role whose session slot this connection holds now, if any. */
  readonly sessionRole = (): string | undefined => this.#slot.role;

  /** The client went away: its work is cancelled; the session slot is given back once the jobs have ended. */
  close(): void {
    this.#closed = true;
    this.#controller.abort(new WorkloadError('ECANCELLED', 'the Wyoming client closed the connection'));
    this.#endSessionIfIdle();
  }

  /** One event from the client, in order. */
  handle(event: WyomingEvent): void {
    if (this.#slot.refused) return;
    try {
      if (this.#slot.takeFor(event.type)) this.#dispatch(event);
    } catch (err) {
      void this.#error(err);
    }
    this.#endSessionIfIdle();
  }

  /** Gives the slot back once nothing of the connection's runs or waits for more input. */
  #endSessionIfIdle(): void {
    const refused = this.#capture !== undefined && 'refused' in this.#capture;
    const waiting = // for more input of a flow that was not refused
      !this.#closed &&
      ((this.#transcribeAsked && !refused) ||
        (this.#capture !== undefined && !refused) ||
        (this.#synthStream !== undefined && !this.#synthStream.refused) ||
        (this.#wake !== undefined && !('refused' in this.#wake)) ||
        this.#wakeStopping);
    this.#slot.releaseUnless(waiting || this.#pending > 0);
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
        this.#transcribeAsked = true;
        this.#capture = undefined;
        this.#asrOrRefuse();
        return;
      case 'detect':
        this.#detect(e);
        return;
      case 'audio-start':
        if (this.#wake) this.#wakeStart(e);
        else this.#audioStart(e);
        return;
      case 'audio-chunk':
        if (this.#wake) this.#wakeChunk(e);
        else this.#audioChunk(e);
        return;
      case 'audio-stop':
        if (this.#wake) this.#wakeStop();
        else this.#audioStop();
        return;
      case 'synthesize':
        // Streaming clients repeat the whole text as `synthesize` for servers that do not stream: already spoken.
        if (this.#synthStream) return;
        this.#synthesize(e);
        return;
      case 'synthesize-start':
        this.#synthStart();
        return;
      case 'synthesize-chunk':
        this.#synthChunk(e);
        return;
      case 'synthesize-stop':
        this.#synthStop();
        return;
      case 'transcript':
        this.#converse(e);
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

  // ---------------------------------------------------------------------------------------- speech to text

  /** The ASR stage, or an error answered now (no model serving) so the client need not send its audio. */
  #asrOrRefuse(): boolean {
    try {
      this.#d.voice.asrStage(this.#d.asr);
      return true;
    } catch (err) {
      this.#capture = { refused: true };
      void this.#error(err);
      return false;
    }
  }

  #audioStart(e: WyomingEvent): void {
    if (this.#capture && 'refused' in this.#capture && this.#transcribeAsked) {
      this.#transcribeAsked = false;
      return;
    }
    // audio-start without transcribe (optional in the streaming flow) is a transcription all the same; only a
    // transcribe cancels what runs, as the protocol's barge-in.
    if (!this.#transcribeAsked && !this.#asrOrRefuse()) return;
    this.#transcribeAsked = false;
    let format: WyomingAudioFormat;
    try {
      format = wyomingAudioFormat(e.data);
    } catch (err) {
      this.#capture = { refused: true };
      throw err;
    }
    this.#capture = { audio: new WyomingAudioIn(format, this.#d.maxAudioSeconds), format };
  }

  #audioChunk(e: WyomingEvent): void {
    const c = this.#capture;
    if (!c) throw new WorkloadError('ESTATE', 'audio-chunk before audio-start');
    if ('refused' in c) return;
    // Chunks carry their own format; one that omits it is taken to be in the stream's.
    const format = e.data['rate'] === undefined ? c.format : wyomingAudioFormat(e.data);
    try {
      c.audio.push(e.payload ?? Buffer.alloc(0), format);
    } catch (err) {
      this.#capture = { refused: true };
      throw err;
    }
  }

  #audioStop(): void {
    const c = this.#capture;
    this.#capture = undefined;
    if (!c) throw new WorkloadError('ESTATE', 'audio-stop before audio-start');
    if ('refused' in c) return;
    const audio = c.audio.finish();
    this.#enqueue(async (signal) => {
      const asr = this.#d.voice.asrStage(this.#d.asr);
      await this.#d.send({ type: 'transcript-start', data: {} });
      // Pieces that arrive together (the engine hands tokens over in batches) go out as one transcript-chunk:
      // an event per token costs the server and the client a frame each for nothing.
      const sent: Array<Promise<void>> = [];
      let pending = '';
      const flush = () => {
        if (pending.length > 0)
          sent.push(this.#d.send({ type: 'transcript-chunk', data: { text: pending } }));
        pending = '';
      };
      const heard = await asr.transcribe(audio, signal, (text) => {
        if (pending.length === 0) setImmediate(flush);
        pending += text;
      });
      flush();
      await Promise.all(sent);
      signal.throwIfAborted();
      await this.#d.send({ type: 'transcript', data: { text: heard.text } });
      await this.#d.send({ type: 'transcript-stop', data: {} });
    });
  }

  // ---------------------------------------------------------------------------------------- wake word

  #detect(e: WyomingEvent): void {
    const names = e.data['names'];
    if (
      names !== undefined &&
      names !== null &&
      (!Array.isArray(names) || names.some((n) => typeof n !== 'string'))
    )
      throw new WorkloadError('EFRAME', 'detect.names must be a list of wake word names');
    this.#wake = { refused: true };
    const { stream } = this.#d.voice.wakeStream('wyoming');
    this.#wake = new WakeDetectRun(stream, (names as string[] | null | undefined) ?? undefined, {
      send: (event) => this.#d.send(event),
      error: (err) => this.#error(err),
    });
  }

  #wakeStart(e: WyomingEvent): void {
    const run = this.#wake;
    if (!run || 'refused' in run) return;
    try {
      run.start(wyomingAudioFormat(e.data));
    } catch (err) {
      this.#wake = { refused: true };
      throw err;
    }
  }

  #wakeChunk(e: WyomingEvent): void {
    const run = this.#wake;
    if (!run || 'refused' in run) return;
    if (!run.started) throw new WorkloadError('ESTATE', 'audio-chunk before audio-start');
    const format = e.data['rate'] === undefined ? undefined : wyomingAudioFormat(e.data);
    const timestamp = typeof e.data['timestamp'] === 'number' ? e.data['timestamp'] : undefined;
    try {
      run.chunk(e.payload ?? Buffer.alloc(0), format ?? run.format!, timestamp);
    } catch (err) {
      this.#wake = { refused: true };
      throw err;
    }
  }

  #wakeStop(): void {
    const run = this.#wake;
    this.#wake = undefined;
    if (!run || 'refused' in run) return;
    if (!run.started) throw new WorkloadError('ESTATE', 'audio-stop before audio-start');
    this.#wakeStopping = true;
    this.#wakeStopped = run
      .stop()
      .catch((err: unknown) => this.#error(err))
      .finally(() => {
        this.#wakeStopping = false;
        this.#endSessionIfIdle();
      });
  }

  // ---------------------------------------------------------------------------------------- text to speech

  #synthesize(e: WyomingEvent): void {
    const text = textField(e, 'text');
    checkTextLength(text.length, this.#d.maxTextChars);
    if (text.trim().length === 0) throw new WorkloadError('EFRAME', 'synthesize.text is empty');
    const tts = this.#d.voice.ttsStage();
    const chunker = new SentenceChunker();
    const sentences = [...chunker.push(text), ...chunker.flush()];
    // One audio stream for the whole text: the sentences are synthesised one after another, chunks sent as made.
    this.#enqueue(async (signal) => {
      const out = new WyomingAudioOut();
      let started = false;
      for (const sentence of sentences) {
        for await (const chunk of tts.synthesize(sentence, signal)) {
          if (!started) {
            started = true;
            await this.#d.send({ type: 'audio-start', data: outFormat(out, chunk.sampleRate) });
          }
          await sendAudio(this.#d.send, out, out.push(chunk.samples, chunk.sampleRate));
        }
      }
      signal.throwIfAborted();
      // Text with nothing to say (punctuation only) still gets a well-formed, empty audio stream.
      if (!started) await this.#d.send({ type: 'audio-start', data: outFormat(out, EMPTY_STREAM_RATE) });
      await sendAudio(this.#d.send, out, out.flush());
      await this.#d.send({ type: 'audio-stop', data: {} });
    });
  }

  #synthStart(): void {
    // Refused now (no TTS) but the stream is still tracked, so its chunks and `synthesize` are not taken as new.
    let refused = false;
    try {
      this.#d.voice.ttsStage();
    } catch (err) {
      refused = true;
      void this.#error(err);
    }
    this.#synthStream = { chunker: new SentenceChunker(), chars: 0, refused };
  }

  #synthChunk(e: WyomingEvent): void {
    const s = this.#synthStream;
    if (!s) throw new WorkloadError('ESTATE', 'synthesize-chunk before synthesize-start');
    const text = textField(e, 'text');
    if (s.refused) return;
    s.chars += text.length;
    try {
      checkTextLength(s.chars, this.#d.maxTextChars);
    } catch (err) {
      s.refused = true;
      throw err;
    }
    for (const sentence of s.chunker.push(text)) this.#speakSentence(sentence);
  }

  #synthStop(): void {
    const s = this.#synthStream;
    this.#synthStream = undefined;
    if (!s) throw new WorkloadError('ESTATE', 'synthesize-stop before synthesize-start');
    if (!s.refused) for (const sentence of s.chunker.flush()) this.#speakSentence(sentence);
    this.#enqueue(async () => {
      await this.#d.send({ type: 'synthesize-stopped', data: {} });
    });
  }

  /** One sentence of a streamed text as its own audio-start … audio-stop group, as soon as it is complete. */
  #speakSentence(sentence: string): void {
    const tts = this.#d.voice.ttsStage();
    this.#enqueue(async (signal) => {
      const out = new WyomingAudioOut();
      let started = false;
      for await (const chunk of tts.synthesize(sentence, signal)) {
        if (!started) {
          started = true;
          await this.#d.send({ type: 'audio-start', data: outFormat(out, chunk.sampleRate) });
        }
        await sendAudio(this.#d.send, out, out.push(chunk.samples, chunk.sampleRate));
      }
      signal.throwIfAborted();
      if (!started) return;
      await sendAudio(this.#d.send, out, out.flush());
      await this.#d.send({ type: 'audio-stop', data: {} });
    });
  }

  // ---------------------------------------------------------------------------------------- conversation

  #converse(e: WyomingEvent): void {
    const text = textField(e, 'text');
    checkTextLength(text.length, this.#d.maxTextChars);
    const context = e.data['context'];
    const named =
      typeof context === 'object' && context !== null
        ? (context as Record<string, unknown>)['conversation_id']
        : undefined;
    const conversation =
      typeof named === 'string' && named.length > 0 && named.length <= 128
        ? named
        : this.#connectionConversation;
    const reply = this.#d.voice.replyStage();
    this.#enqueue(async (signal) => {
      const user: ChatMessage = { role: 'user', content: text };
      // An empty voice.systemPrompt means none, not an empty system turn.
      const system: ChatMessage[] = this.#d.systemPrompt
        ? [{ role: 'system', content: this.#d.systemPrompt }]
        : [];
      const history: ChatMessage[] = [...system, ...this.#d.conversations.get(conversation), user];
      const ctx = { conversation_id: conversation };
      await this.#d.send({ type: 'handled-start', data: { context: ctx } });
      const stream = reply.reply({ history, signal });
      let answer = '';
      for await (const piece of stream) {
        answer += piece;
        await this.#d.send({ type: 'handled-chunk', data: { text: piece } });
      }
      await stream.result;
      signal.throwIfAborted();
      this.#d.conversations.remember(conversation, user, { role: 'assistant', content: answer });
      await this.#d.send({ type: 'handled', data: { text: answer, context: ctx } });
      await this.#d.send({ type: 'handled-stop', data: {} });
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
