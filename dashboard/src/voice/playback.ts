// Reply audio: s16le chunks scheduled back to back on one AudioContext, so sentences play without gaps; a
// barge-in drops what is still queued. Counts what it played, which the page shows (and the tests check).

export class ReplyPlayer {
  readonly #ctx: AudioContext;
  #nextAt = 0;
  #sources = new Set<AudioBufferSourceNode>();
  playedSeconds = 0;
  chunks = 0;

  readonly #onIdle: () => void;

  /** `onIdle` runs when the last queued chunk has finished playing. */
  constructor(ctx: AudioContext, onIdle: () => void = () => {}) {
    this.#ctx = ctx;
    this.#onIdle = onIdle;
  }

  play(pcm: ArrayBuffer, sampleRate: number): void {
    const ints = new Int16Array(pcm);
    if (ints.length === 0) return;
    const buffer = this.#ctx.createBuffer(1, ints.length, sampleRate);
    const data = buffer.getChannelData(0);
    for (let i = 0; i < ints.length; i++) data[i] = ints[i]! / 0x8000;
    const src = this.#ctx.createBufferSource();
    src.buffer = buffer;
    src.connect(this.#ctx.destination);
    const at = Math.max(this.#ctx.currentTime + 0.02, this.#nextAt);
    src.start(at);
    this.#nextAt = at + buffer.duration;
    this.#sources.add(src);
    src.addEventListener('ended', () => {
      this.#sources.delete(src);
      if (this.#sources.size === 0) this.#onIdle();
    });
    this.playedSeconds += buffer.duration;
    this.chunks++;
  }

  stop(): void {
    for (const s of this.#sources) s.stop();
    this.#sources.clear();
    this.#nextAt = 0;
  }
}
