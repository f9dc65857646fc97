// Speech out of an Llm whose model has a talker (docs/TALKER.md): which talker path its config takes, and
// Llm.speak()'s stream of PCM chunks, pulled through the addon's bounded queue (engine/native/llm_speech.cc).
import { invalidParameter } from '../../lib/errors.js';
import { EngineError, fromNative } from './errors.js';
import type { NativeLlmHandle } from './native.js';
import type { SerialQueue } from './serial-queue.js';

/**
 * Which of MNN's two talker paths a config takes: Qwen3-TTS (`talker_type` or `model_type` "qwen3_tts") speaks a
 * given text; the Qwen2.5-Omni one voices what its thinker generates (docs/TALKER.md).
 */
export function talkerFamily(config: Readonly<Record<string, unknown>>): 'qwen3-tts' | 'omni' {
  return config['talker_type'] === 'qwen3_tts' || config['model_type'] === 'qwen3_tts' ? 'qwen3-tts' : 'omni';
}

/** MNN's talkers (Qwen2.5-Omni token2wav, Qwen3-TTS) produce 24 kHz mono float PCM. */
export const SPEECH_SAMPLE_RATE = 24000;

export interface SpeechChunk {
  samples: Float32Array;
  sampleRate: number;
  /** The talker's last chunk of this utterance. */
  last: boolean;
}

export interface SpeakOptions {
  /**
   * The text to say. A Qwen3-TTS talker synthesises it directly; an omni talker has its thinker take it as its
   * answer (this replaces the conversation in the KV cache) and voices that. Without it, an omni talker voices
   * the last generation, once; a Qwen3-TTS talker needs it.
   */
  text?: string;
  language?: string;
  maxNewTokens?: number;
  /** Reference voice (WAV path) for voice cloning talkers. */
  refAudio?: string;
  signal?: AbortSignal;
}

/**
 * Llm.speak() once the model is known to be live: the checks of the options against the model's talker, then the
 * chunks, the model's call queue held from the first to the last (its other calls wait).
 */
export function speechStream(
  handle: NativeLlmHandle,
  queue: SerialQueue,
  model: { configPath: string; config: Readonly<Record<string, unknown>>; talker: boolean },
  options: SpeakOptions,
): AsyncGenerator<SpeechChunk, void, undefined> {
  if (!model.talker) {
    throw new EngineError(
      'ENOTSUP',
      `${model.configPath} has no talker (has_talker is not set in its config)`,
    );
  }
  if (options.text !== undefined && (typeof options.text !== 'string' || options.text.length === 0)) {
    throw invalidParameter('text', 'a non-empty string', options.text);
  }
  const family = talkerFamily(model.config);
  if (family === 'qwen3-tts' && options.text === undefined) {
    throw invalidParameter(
      'text',
      'a non-empty string (a Qwen3-TTS talker only speaks a given text)',
      undefined,
    );
  }
  const { signal, ...rest } = options;
  const mode = family === 'qwen3-tts' ? 'tts' : rest.text === undefined ? 'last' : 'text';
  const request = { ...rest, mode } as const;
  return (async function* () {
    const release = await queue.acquire();
    let running: Promise<void>;
    try {
      signal?.throwIfAborted();
      running = handle.speak(request);
    } catch (err) {
      release();
      throw signal?.aborted ? err : fromNative(err);
    }
    const onAbort = () => handle.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let finished = false;
    try {
      for (;;) {
        const chunk = await handle.nextSpeechChunk();
        if (chunk === null) break;
        if (signal?.aborted) continue; // cut off while on its way: drained, not played
        yield { samples: chunk.samples, sampleRate: SPEECH_SAMPLE_RATE, last: chunk.last };
      }
      finished = true;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!finished) handle.cancel();
      try {
        await running.catch((err: unknown) => {
          throw fromNative(err);
        });
      } finally {
        release();
      }
    }
  })();
}
