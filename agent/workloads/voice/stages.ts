// The voice pipeline's stages as small interfaces, one implementation per model family:
//
//   ASR  AudioLlmAsr    audio-input LLMs exported by MNN's llmexport: Qwen2-Audio, Qwen2.5-Omni, Qwen3-ASR
//                       (audio goes into the prompt; the model is asked for a transcript)
//   LLM  ChatReplyStage any text LLM (Qwen, Llama, Gemma, … exports) or an omni model; with `audioIn` an omni
//                       model (Qwen2.5-Omni) hears the utterance itself and there is no separate ASR stage
//   TTS  TalkerTts      an omni model's talker (Qwen2.5-Omni token2wav, Qwen3-TTS): 24 kHz PCM streamed by
//                       the engine
//        EspeakTts      espeak-ng (Debian, Yocto meta-oe) when no speech model is installed, so the assistant
//                       always speaks
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { ChatMessage, ChatModel, ChatResult, ChatStream } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import type { ActingAssistant, AssistantEvent, AssistantTurn } from '../tools/assistant.js';
import { streamTurn } from '../tools/assistant-stream.js';

/** MNN's whisper front end crashes on clips shorter than one 10 ms hop; 100 ms is the shortest useful request. */
export const MIN_ASR_SAMPLES = 1600;

export interface Transcript {
  text: string;
  result: ChatResult;
}

export interface AsrStage {
  readonly family: string;
  /** 16 kHz mono float PCM in, text out; `onText` sees the text as the model produces it. */
  transcribe(audio: Float32Array, signal: AbortSignal, onText?: (piece: string) => void): Promise<Transcript>;
}

export interface ReplyRequest {
  history: ChatMessage[];
  /** The utterance itself, for an omni model that hears it (no ASR stage). */
  audio?: Float32Array;
  signal: AbortSignal;
  /** The tool calls and results of the turn as they happen (a stage with an acting assistant). */
  onToolEvent?: (event: AssistantEvent) => void;
  /** The request came from another machine (Wyoming): tools that act on the board stay off unless allowed. */
  remote?: boolean;
}

/** A reply stream; with an acting assistant, also the turn's record with its tool calls. */
export interface ReplyStream extends ChatStream {
  readonly turn?: Promise<AssistantTurn>;
}

export interface ReplyStage {
  readonly family: string;
  /** Whether the model takes the utterance's audio directly (omni); then no ASR stage is needed. */
  readonly audioIn: boolean;
  reply(request: ReplyRequest): ReplyStream;
}

export interface PcmChunk {
  samples: Float32Array;
  sampleRate: number;
}

export interface TtsStage {
  readonly family: string;
  /** PCM of one sentence, chunk by chunk; aborting stops synthesis. */
  synthesize(text: string, signal: AbortSignal): AsyncIterable<PcmChunk>;
  /** Speech will be wanted soon (a turn has started): start now what is slow to start, while ASR and the LLM
   *  work, so the first sentence does not wait for it. */
  prepare?(): void;
  /** Lets go of what prepare() started and was not used. */
  dispose?(): void;
}

export function checkUtterance(audio: Float32Array): void {
  if (audio.length < MIN_ASR_SAMPLES) {
    throw new WorkloadError(
      'EAUDIO',
      `Utterance too short for speech recognition: ${audio.length} samples (at least ${MIN_ASR_SAMPLES}, 100 ms at 16 kHz)`,
    );
  }
}

export class AudioLlmAsr implements AsrStage {
  readonly family = 'audio-llm (Qwen2-Audio, Qwen2.5-Omni, Qwen3-ASR)';
  readonly #model: ChatModel;
  readonly #instruction: string;
  readonly #maxNewTokens: number;

  constructor(model: ChatModel, options: { instruction?: string; maxNewTokens?: number } = {}) {
    if (!model.capabilities.audio) {
      throw new WorkloadError(
        'ENOMODEL',
        `${model.id} takes no audio input (is_audio is not set): it cannot be the ASR stage`,
      );
    }
    this.#model = model;
    this.#instruction = options.instruction ?? 'Transcribe the audio exactly.';
    this.#maxNewTokens = options.maxNewTokens ?? 128;
  }

  async transcribe(
    audio: Float32Array,
    signal: AbortSignal,
    onText?: (piece: string) => void,
  ): Promise<Transcript> {
    checkUtterance(audio);
    const stream = this.#model.generate({
      messages: [{ role: 'user', content: this.#instruction }],
      audio,
      maxNewTokens: this.#maxNewTokens,
      signal,
    });
    for await (const piece of stream) onText?.(piece);
    const result = await stream.result;
    return { text: result.text.trim(), result };
  }
}

export class ChatReplyStage implements ReplyStage {
  readonly family: string;
  readonly audioIn: boolean;
  readonly #model: ChatModel;
  readonly #maxNewTokens: number;
  readonly #assistant: ActingAssistant | undefined;

  /** With `assistant`, the reply is the acting assistant's turn: tool rounds included, their text streamed. */
  constructor(
    model: ChatModel,
    options: { maxNewTokens: number; audioIn?: boolean; assistant?: ActingAssistant },
  ) {
    this.#model = model;
    this.#maxNewTokens = options.maxNewTokens;
    this.#assistant = options.assistant;
    this.audioIn = options.audioIn ?? false;
    if (this.audioIn && !model.capabilities.audio) {
      throw new WorkloadError(
        'ENOMODEL',
        `${model.id} takes no audio input: it cannot answer speech directly (omni mode)`,
      );
    }
    this.family = this.audioIn ? 'omni (Qwen2.5-Omni)' : 'text LLM';
  }

  reply(request: ReplyRequest): ReplyStream {
    if (this.#assistant)
      return streamTurn(this.#assistant, this.#model, {
        messages: request.history,
        ...(this.audioIn && request.audio ? { audio: request.audio } : {}),
        maxNewTokens: this.#maxNewTokens,
        signal: request.signal,
        remote: request.remote ?? false,
        ...(request.onToolEvent ? { onEvent: request.onToolEvent } : {}),
      });
    return this.#model.generate({
      messages: request.history,
      ...(this.audioIn && request.audio ? { audio: request.audio } : {}),
      maxNewTokens: this.#maxNewTokens,
      signal: request.signal,
    });
  }
}

export class TalkerTts implements TtsStage {
  readonly family = 'omni talker (Qwen2.5-Omni, Qwen3-TTS)';
  readonly #model: ChatModel;

  constructor(model: ChatModel) {
    if (!model.capabilities.talker || !model.speak) {
      throw new WorkloadError(
        'ENOMODEL',
        `${model.id} has no talker (has_talker is not set): it cannot be the TTS stage`,
      );
    }
    this.#model = model;
  }

  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<PcmChunk> {
    for await (const chunk of this.#model.speak!({ text, signal })) {
      yield { samples: chunk.samples, sampleRate: chunk.sampleRate };
    }
  }
}

export interface EspeakOptions {
  /** espeak-ng binary; a board image may put it elsewhere. */
  command: string;
  voice: string;
  wordsPerMinute: number;
}

export const defaultEspeakOptions: EspeakOptions = {
  command: 'espeak-ng',
  voice: 'en-us',
  wordsPerMinute: 175,
};

/** espeak-ng writes a WAV to stdout as it synthesises; its header is 44 bytes, then s16le mono PCM. */
const ESPEAK_HEADER = 44;

export class EspeakTts implements TtsStage {
  readonly family = 'espeak-ng (formant synthesis, no model)';
  readonly #options: EspeakOptions;
  /** An espeak-ng started by prepare(), its voice loaded, waiting for its text on stdin: its start (20-60 ms on a
   *  busy 2-core machine, most of the time to a sentence's first audio) is then off the turn's path. */
  #spare: ChildProcessWithoutNullStreams | undefined;

  constructor(options: Partial<EspeakOptions> = {}) {
    this.#options = { ...defaultEspeakOptions, ...options };
  }

  prepare(): void {
    if (this.#spare && running(this.#spare)) return;
    this.#spare?.kill('SIGKILL');
    this.#spare = this.#spawn();
  }

  dispose(): void {
    this.#spare?.kill('SIGKILL');
    this.#spare = undefined;
  }

  #spawn(): ChildProcessWithoutNullStreams {
    const { command, voice, wordsPerMinute } = this.#options;
    // Text goes through stdin so nothing in it can be read as an option.
    const child = spawn(command, ['--stdout', '--stdin', '-v', voice, '-s', String(wordsPerMinute)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // A spare nobody has taken yet must not fail the process with an unheard 'error' (no espeak-ng).
    child.on('error', () => {});
    child.stdin.on('error', () => {});
    return child;
  }

  /** The prepared espeak-ng when it is still there to take, else a new one. */
  #take(): ChildProcessWithoutNullStreams {
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare && running(spare)) return spare;
    spare?.kill('SIGKILL');
    return this.#spawn();
  }

  async *synthesize(text: string, signal: AbortSignal): AsyncIterable<PcmChunk> {
    if (text.trim().length === 0) return;
    signal.throwIfAborted();
    const { command } = this.#options;
    const child = this.#take();
    const onAbort = () => child.kill('SIGKILL');
    signal.addEventListener('abort', onAbort, { once: true });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr = (stderr + d).slice(-500);
    });
    const exited = new Promise<{ code: number | null; error?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, error }));
      child.once('close', (code) => resolve({ code }));
    });
    child.stdin.end(text);
    let header: Buffer | undefined = Buffer.alloc(0);
    let sampleRate = 22050;
    let carry = Buffer.alloc(0);
    try {
      for await (const data of child.stdout as AsyncIterable<Buffer>) {
        let bytes = data;
        if (header !== undefined) {
          header = Buffer.concat([header, bytes]);
          if (header.length < ESPEAK_HEADER) continue;
          sampleRate = header.readUInt32LE(24);
          bytes = header.subarray(ESPEAK_HEADER);
          header = undefined;
        }
        bytes = carry.length > 0 ? Buffer.concat([carry, bytes]) : bytes;
        const whole = bytes.length - (bytes.length % 2);
        carry = Buffer.from(bytes.subarray(whole));
        if (whole === 0) continue;
        const samples = new Float32Array(whole / 2);
        for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2) / 32768;
        yield { samples, sampleRate };
      }
      const { code, error } = await exited;
      signal.throwIfAborted();
      if (error) {
        throw new WorkloadError(
          'ETOOL',
          `Cannot run ${command} for speech output: ${error.message} (install espeak-ng)`,
        );
      }
      if (code !== 0)
        throw new WorkloadError('ETOOL', `${command} exited with code ${code}: ${stderr.trim()}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }
}

/** Started (it has a pid) and not exited, killed or failed. */
function running(child: ChildProcessWithoutNullStreams): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null && !child.killed;
}

// CJK full stops as escapes: one character above U+00FF makes V8 keep the whole bundled chunk as UTF-16.
const SENTENCE_END = /[.!?\u3002\uff01\uff1f;:\n]["')\]]*\s/u;
// The same at the very end of what has arrived: the sentence is complete with its punctuation token, so it is
// cut now instead of one decode step later, when the next token's leading space confirms it. A full stop right
// after a digit waits (it may be a decimal point: "3.5").
const SENTENCE_END_NOW = /(?:[!?\u3002\uff01\uff1f;:\n]|(?<!\d)\.)["')\]]*$/u;
// A clause of the first sentence: speech starts on it when it is long enough to sound like a phrase.
const CLAUSE_END = /[,\uff0c\u3001]["')\]]*(?:\s|$)/gu;

export interface SentenceChunkerOptions {
  /** Runs without punctuation are cut at a word boundary after this many characters (default 200). */
  maxChars?: number;
  /** The first chunk of a reply may end at a comma once it has this many characters (default 24; 0: never). */
  firstClauseChars?: number;
}

/**
 * Cuts the LLM's token stream into sentences so speech can start after the first one (or its first clause)
 * instead of after the whole reply; very long runs without punctuation are cut at a word boundary.
 */
export class SentenceChunker {
  #buffer = '';
  #emitted = 0;
  readonly #maxChars: number;
  readonly #firstClauseChars: number;

  constructor(options: number | SentenceChunkerOptions = {}) {
    const o = typeof options === 'number' ? { maxChars: options } : options;
    this.#maxChars = o.maxChars ?? 200;
    this.#firstClauseChars = o.firstClauseChars ?? 24;
  }

  push(text: string): string[] {
    this.#buffer += text;
    const out: string[] = [];
    for (;;) {
      const cut = this.#cutAt();
      if (cut < 0) break;
      const sentence = this.#buffer.slice(0, cut).trim();
      this.#buffer = this.#buffer.slice(cut);
      if (sentence) {
        out.push(sentence);
        this.#emitted++;
      }
    }
    return out;
  }

  flush(): string[] {
    const rest = this.#buffer.trim();
    this.#buffer = '';
    return rest ? [rest] : [];
  }

  #cutAt(): number {
    const b = this.#buffer;
    const m = SENTENCE_END.exec(b);
    if (m) return m.index + m[0].length;
    const now = SENTENCE_END_NOW.exec(b);
    if (now && b.trim().length > now[0].length) return b.length;
    if (this.#emitted === 0 && this.#firstClauseChars > 0) {
      for (const c of b.matchAll(CLAUSE_END))
        if (c.index >= this.#firstClauseChars) return c.index + c[0].length;
    }
    if (b.length > this.#maxChars) {
      const space = b.lastIndexOf(' ', this.#maxChars);
      return space > 0 ? space + 1 : this.#maxChars;
    }
    return -1;
  }
}
