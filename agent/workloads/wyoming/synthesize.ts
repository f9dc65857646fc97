// Text to speech on a Wyoming connection:
//   synthesize                                 → audio-start, audio-chunk…, audio-stop (one group per sentence)
//   synthesize-start, synthesize-chunk…, synthesize (ignored: sent for old servers), synthesize-stop
//                                              → audio groups as sentences complete, then synthesize-stopped
// Each synthesis runs as one of the connection's jobs; audio goes out as it is made, paced by the client.
import { WorkloadError } from '../shared/errors.js';
import { SentenceChunker } from '../voice/stages.js';
import { WyomingAudioOut } from './audio.js';
import type { WyomingEvent } from './codec.js';
import { checkTextLength, outFormat, sendAudio, textField } from './event-fields.js';
import type { FlowHost, WyomingConnectionDeps } from './flow.js';

/** The rate announced for an audio stream that has no chunks (espeak-ng's). */
const EMPTY_STREAM_RATE = 22050;

export class SynthesizeFlow {
  readonly #host: FlowHost;
  #stream: { chunker: SentenceChunker; chars: number; refused: boolean } | undefined;

  constructor(host: FlowHost) {
    this.#host = host;
  }

  /** Waiting for more text of a stream that was not refused (the live session stays claimed). */
  get waiting(): boolean {
    return this.#stream !== undefined && !this.#stream.refused;
  }

  synthesize(e: WyomingEvent): void {
    // Streaming clients repeat the whole text as `synthesize` for servers that do not stream: already spoken.
    if (this.#stream) return;
    const d = this.#host.deps;
    const text = textField(e, 'text');
    checkTextLength(text.length, d.maxTextChars);
    if (text.trim().length === 0) throw new WorkloadError('EFRAME', 'synthesize.text is empty');
    const tts = d.voice.ttsStage();
    const chunker = new SentenceChunker();
    const sentences = [...chunker.push(text), ...chunker.flush()];
    // One audio stream for the whole text: the sentences are synthesised one after another, chunks sent as made.
    this.#host.enqueue(async (signal) => {
      const out = new WyomingAudioOut();
      const started = await speakInto(d, tts, sentences, out, signal);
      signal.throwIfAborted();
      // Text with nothing to say (punctuation only) still gets a well-formed, empty audio stream.
      if (!started) await d.send({ type: 'audio-start', data: outFormat(out, EMPTY_STREAM_RATE) });
      await sendAudio(d.send, out, out.flush());
      await d.send({ type: 'audio-stop', data: {} });
    });
  }

  start(): void {
    // Refused now (no TTS) but the stream is still tracked, so its chunks and `synthesize` are not taken as new.
    let refused = false;
    try {
      this.#host.deps.voice.ttsStage();
    } catch (err) {
      refused = true;
      void this.#host.error(err);
    }
    this.#stream = { chunker: new SentenceChunker(), chars: 0, refused };
  }

  chunk(e: WyomingEvent): void {
    const s = this.#stream;
    if (!s) throw new WorkloadError('ESTATE', 'synthesize-chunk before synthesize-start');
    const text = textField(e, 'text');
    if (s.refused) return;
    s.chars += text.length;
    try {
      checkTextLength(s.chars, this.#host.deps.maxTextChars);
    } catch (err) {
      s.refused = true;
      throw err;
    }
    for (const sentence of s.chunker.push(text)) this.#speakSentence(sentence);
  }

  stop(): void {
    const s = this.#stream;
    this.#stream = undefined;
    if (!s) throw new WorkloadError('ESTATE', 'synthesize-stop before synthesize-start');
    if (!s.refused) for (const sentence of s.chunker.flush()) this.#speakSentence(sentence);
    this.#host.enqueue(async () => {
      await this.#host.deps.send({ type: 'synthesize-stopped', data: {} });
    });
  }

  /** One sentence of a streamed text as its own audio-start … audio-stop group, as soon as it is complete. */
  #speakSentence(sentence: string): void {
    const d = this.#host.deps;
    const tts = d.voice.ttsStage();
    this.#host.enqueue(async (signal) => {
      const out = new WyomingAudioOut();
      const started = await speakInto(d, tts, [sentence], out, signal);
      signal.throwIfAborted();
      if (!started) return;
      await sendAudio(d.send, out, out.flush());
      await d.send({ type: 'audio-stop', data: {} });
    });
  }
}

/** The sentences' speech as one audio stream: `audio-start` with the first chunk's rate, then every chunk as it is
 *  made. Whether anything was said (text of punctuation alone says nothing). */
async function speakInto(
  d: WyomingConnectionDeps,
  tts: ReturnType<WyomingConnectionDeps['voice']['ttsStage']>,
  sentences: readonly string[],
  out: WyomingAudioOut,
  signal: AbortSignal,
): Promise<boolean> {
  let started = false;
  for (const sentence of sentences) {
    for await (const chunk of tts.synthesize(sentence, signal)) {
      if (!started) {
        started = true;
        await d.send({ type: 'audio-start', data: outFormat(out, chunk.sampleRate) });
      }
      await sendAudio(d.send, out, out.push(chunk.samples, chunk.sampleRate));
    }
  }
  return started;
}
