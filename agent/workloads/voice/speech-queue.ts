// The sentences of one turn's reply, spoken one after another by the TTS stage while the LLM keeps generating
// the next ones. Chunks go to `onChunk` as they are synthesised; the turn's TTS metrics are filled in.
import type { Clock } from '../../../lib/clock.js';
import type { PcmChunk, TtsStage } from './stages.js';
import type { TurnMetrics } from './turn-store.js';

export interface SpeechQueue {
  say(sentence: string): void;
  /** No more sentences: `finished` settles once the queued ones are spoken. */
  end(): void;
  /** Rejects with the signal's reason when aborted, or with the TTS stage's error. */
  finished: Promise<void>;
}

export function startSpeechQueue(o: {
  tts: TtsStage;
  clock: Clock;
  signal: AbortSignal;
  metrics: TurnMetrics;
  /** Monotonic ms at which the turn began (for ttfaMs). */
  t0: number;
  onChunk(chunk: PcmChunk, chunkMs: number, now: number): void;
}): SpeechQueue {
  const { clock, tts, signal, metrics } = o;
  const queue: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  let synthMs = 0;
  let audioMs = 0;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const onAbort = () => notify();
  signal.addEventListener('abort', onAbort, { once: true });
  const finished = (async () => {
    try {
      for (;;) {
        signal.throwIfAborted();
        const sentence = queue.shift();
        if (sentence === undefined) {
          if (ended) break;
          await new Promise<void>((r) => {
            wake = r;
          });
          continue;
        }
        let mark = clock.monotonicMs();
        const firstSentence = metrics.ttfaMs === undefined;
        for await (const chunk of tts.synthesize(sentence, signal)) {
          signal.throwIfAborted();
          const now = clock.monotonicMs();
          synthMs += now - mark;
          if (metrics.ttfaMs === undefined) {
            metrics.ttfaMs = now - o.t0;
            if (firstSentence) metrics.ttsFirstMs = now - mark;
          }
          const chunkMs = (chunk.samples.length / chunk.sampleRate) * 1000;
          audioMs += chunkMs;
          o.onChunk(chunk, chunkMs, now);
          mark = clock.monotonicMs();
        }
      }
      if (audioMs > 0) metrics.ttsRtf = synthMs / audioMs;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  })();
  finished.catch(() => {});
  return {
    say(sentence) {
      queue.push(sentence);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    finished,
  };
}
