// Speech to text on a Wyoming connection: transcribe?, audio-start, audio-chunk…, audio-stop →
// transcript-start, transcript-chunk…, transcript, transcript-stop. Chunks are converted as they arrive; the
// transcription runs as one of the connection's jobs.
import { WorkloadError } from '../shared/errors.js';
import { type WyomingAudioFormat, WyomingAudioIn, wyomingAudioFormat } from './audio.js';
import type { WyomingEvent } from './codec.js';
import type { FlowHost } from './flow.js';

type Capture = { audio: WyomingAudioIn; format: WyomingAudioFormat } | { refused: true };

export class TranscribeFlow {
  readonly #host: FlowHost;
  #capture: Capture | undefined;
  #asked = false;

  constructor(host: FlowHost) {
    this.#host = host;
  }

  /** Waiting for more input of a transcription that was not refused (the live session stays claimed). */
  get waiting(): boolean {
    const refused = this.#capture !== undefined && 'refused' in this.#capture;
    return (this.#asked && !refused) || (this.#capture !== undefined && !refused);
  }

  /** `transcribe`: the audio that follows is to be transcribed (the connection has cancelled what ran). */
  ask(): void {
    this.#asked = true;
    this.#capture = undefined;
    this.#asrOrRefuse();
  }

  /** The ASR stage, or an error answered now (no model serving) so the client need not send its audio. */
  #asrOrRefuse(): boolean {
    const d = this.#host.deps;
    try {
      d.voice.asrStage(d.asr);
      return true;
    } catch (err) {
      this.#capture = { refused: true };
      void this.#host.error(err);
      return false;
    }
  }

  start(e: WyomingEvent): void {
    if (this.#capture && 'refused' in this.#capture && this.#asked) {
      this.#asked = false;
      return;
    }
    // audio-start without transcribe (optional in the streaming flow) is a transcription all the same; only a
    // transcribe cancels what runs, as the protocol's barge-in.
    if (!this.#asked && !this.#asrOrRefuse()) return;
    this.#asked = false;
    let format: WyomingAudioFormat;
    try {
      format = wyomingAudioFormat(e.data);
    } catch (err) {
      this.#capture = { refused: true };
      throw err;
    }
    this.#capture = { audio: new WyomingAudioIn(format, this.#host.deps.maxAudioSeconds), format };
  }

  chunk(e: WyomingEvent): void {
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

  stop(): void {
    const c = this.#capture;
    this.#capture = undefined;
    if (!c) throw new WorkloadError('ESTATE', 'audio-stop before audio-start');
    if ('refused' in c) return;
    const audio = c.audio.finish();
    const d = this.#host.deps;
    this.#host.enqueue(async (signal) => {
      const asr = d.voice.asrStage(d.asr);
      await d.send({ type: 'transcript-start', data: {} });
      // Pieces that arrive together (the engine hands tokens over in batches) go out as one transcript-chunk:
      // an event per token costs the server and the client a frame each for nothing.
      const sent: Array<Promise<void>> = [];
      let pending = '';
      const flush = () => {
        if (pending.length > 0) sent.push(d.send({ type: 'transcript-chunk', data: { text: pending } }));
        pending = '';
      };
      const heard = await asr.transcribe(audio, signal, (text) => {
        if (pending.length === 0) setImmediate(flush);
        pending += text;
      });
      flush();
      await Promise.all(sent);
      signal.throwIfAborted();
      await d.send({ type: 'transcript', data: { text: heard.text } });
      await d.send({ type: 'transcript-stop', data: {} });
    });
  }
}
