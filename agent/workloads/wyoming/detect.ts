// Wake word detection on a Wyoming connection: detect, audio-start, audio-chunk…, audio-stop → detection
// {name, timestamp} per wake word heard, else not-detected. After `detect` the audio stream that follows is for
// the wake word, not speech to text; the scoring itself is wake-detect.ts's.
import { WorkloadError } from '../shared/errors.js';
import { wyomingAudioFormat } from './audio.js';
import type { WyomingEvent } from './codec.js';
import type { FlowHost } from './flow.js';
import { WakeDetectRun } from './wake-detect.js';

export class DetectFlow {
  readonly #host: FlowHost;
  #run: WakeDetectRun | { refused: true } | undefined;
  /** The last run's audio-stop (scoring what is left, then not-detected). */
  #stopped: Promise<void> = Promise.resolve();
  #stopping = false;

  constructor(host: FlowHost) {
    this.#host = host;
  }

  /** A `detect` came and its audio stream has not stopped: audio events are this flow's. */
  get active(): boolean {
    return this.#run !== undefined;
  }

  /** Waiting for more input of a run that was not refused, or still answering the last one. */
  get waiting(): boolean {
    return (this.#run !== undefined && !('refused' in this.#run)) || this.#stopping;
  }

  /** Resolves when the last wake-word stream was answered. */
  get stopped(): Promise<void> {
    return this.#stopped;
  }

  detect(e: WyomingEvent): void {
    const names = e.data['names'];
    if (
      names !== undefined &&
      names !== null &&
      (!Array.isArray(names) || names.some((n) => typeof n !== 'string'))
    )
      throw new WorkloadError('EFRAME', 'detect.names must be a list of wake word names');
    // Refused until the stream is open: a `detect` the wake role cannot serve still claims the audio after it.
    this.#run = { refused: true };
    const { stream } = this.#host.deps.voice.wakeStream('wyoming');
    this.#run = new WakeDetectRun(stream, (names as string[] | null | undefined) ?? undefined, {
      send: (event) => this.#host.deps.send(event),
      error: (err) => this.#host.error(err),
    });
  }

  start(e: WyomingEvent): void {
    const run = this.#run;
    if (!run || 'refused' in run) return;
    try {
      run.start(wyomingAudioFormat(e.data));
    } catch (err) {
      this.#run = { refused: true };
      throw err;
    }
  }

  chunk(e: WyomingEvent): void {
    const run = this.#run;
    if (!run || 'refused' in run) return;
    if (!run.started) throw new WorkloadError('ESTATE', 'audio-chunk before audio-start');
    const format = e.data['rate'] === undefined ? undefined : wyomingAudioFormat(e.data);
    const timestamp = typeof e.data['timestamp'] === 'number' ? e.data['timestamp'] : undefined;
    try {
      run.chunk(e.payload ?? Buffer.alloc(0), format ?? run.format!, timestamp);
    } catch (err) {
      this.#run = { refused: true };
      throw err;
    }
  }

  stop(): void {
    const run = this.#run;
    this.#run = undefined;
    if (!run || 'refused' in run) return;
    if (!run.started) throw new WorkloadError('ESTATE', 'audio-stop before audio-start');
    this.#stopping = true;
    this.#stopped = run
      .stop()
      .catch((err: unknown) => this.#host.error(err))
      .finally(() => {
        this.#stopping = false;
        this.#host.settled();
      });
  }
}
