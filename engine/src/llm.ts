// Llm: an MNN LLM (text, vision or audio input) with a token stream. A native thread per generation decodes at
// most `readAhead` tokens ahead of the consumer and hands tokens over in batches, so the decode loop never waits
// for a round trip through JS, an AbortSignal stops generation within one token, and a slow consumer slows the
// model instead of growing a buffer.
import { dirname, isAbsolute, join } from 'node:path';
import { invalidParameter } from '../../lib/errors.js';
import { EngineError, fromNative } from './errors.js';
import {
  BatchInbox,
  type GenerationResult,
  type GenerationStats,
  LlmGeneration,
  monotonicUs,
  recordBatch,
} from './generation.js';
import { createAddonLoader } from './loader.js';
import type { EngineAddon, FinishReason, NativeLlmHandle, PreparedContexts } from './native.js';
import { buildPrefillRequest, type ChatMessage } from './prompt.js';
import { SerialQueue } from './serial-queue.js';
import { type SpeakOptions, type SpeechChunk, speechStream, talkerFamily } from './speech.js';

export {
  emptyDelivery,
  type GenerationDelivery,
  type GenerationResult,
  type GenerationStats,
  LlmGeneration,
  monotonicUs,
} from './generation.js';
export {
  SPEECH_SAMPLE_RATE,
  type SpeakOptions,
  type SpeechChunk,
  talkerFamily,
} from './speech.js';

import {
  archSafeOverrides,
  type ConversationOptions,
  checkConversations,
  checkDelivery,
  checkOverrides,
  type GenerateOptions,
  kvBytesPerTokenBound,
  type LlmConfigOverrides,
  type LlmLoadOptions,
  prefillChunkOf,
} from './llm-options.js';

export {
  ARM82_PREFILL_CHUNK,
  arm82ExactChunk,
  arm82SafeSampler,
  type ConversationOptions,
  encoderPrecision,
  type GenerateOptions,
  kvBytesPerTokenBound,
  type LlmConfigOverrides,
  type LlmLoadOptions,
  MAX_CONVERSATIONS,
  MAX_CPU_ID,
  MAX_HANDOVER_HOLD_MS,
  MAX_READ_AHEAD,
} from './llm-options.js';

/** Where a load's time went (the engine host adds nothing to it). */
export interface LoadTiming {
  /** Reading the weight files (page cache cold or warm: the bench shows both). */
  readMs: number;
  readBytes: number;
  /** MNN's Llm::load after that: parse, allocate, repack weights. */
  mnnLoadMs: number;
  /** Making the conversation contexts ahead (`conversations.prepare`), after MNN's load. */
  contextsMs?: number;
}

/** The files MNN reads at load, as its config resolves them (base_dir + name, with MNN's default names). */
export function weightFiles(configPath: string, config: Readonly<Record<string, unknown>>): string[] {
  const base = typeof config['base_dir'] === 'string' ? config['base_dir'] : `${dirname(configPath)}/`;
  const name = (key: string, fallback: string) =>
    typeof config[key] === 'string' ? (config[key] as string) : fallback;
  const llmModel = name('llm_model', 'llm.mnn');
  const files = [
    llmModel,
    name('llm_weight', `${llmModel}.weight`),
    name('embedding_file', 'embeddings_bf16.bin'),
  ];
  if (config['is_visual'] === true)
    files.push(name('visual_model', 'visual.mnn'), `${name('visual_model', 'visual.mnn')}.weight`);
  if (config['is_audio'] === true)
    files.push(name('audio_model', 'audio.mnn'), `${name('audio_model', 'audio.mnn')}.weight`);
  if (config['has_talker'] === true && talkerFamily(config) === 'omni')
    files.push(
      name('talker_model', 'talker.mnn'),
      name('talker_embedding_file', 'talker_embeddings_bf16.bin'),
      name('predit_model', 'predit.mnn'),
      name('dit_model', 'dit.mnn'),
      name('bigvgan_model', 'bigvgan.mnn'),
      name('spk_dict', 'spk_dict.mnn'),
    );
  return files.map((f) => (isAbsolute(f) ? f : join(base, f)));
}

export interface LlmCapabilities {
  vision: boolean;
  audio: boolean;
  talker: boolean;
}

export class Llm {
  readonly configPath: string;
  /** The merged configuration MNN will run with (config.json + llm_config.json + overrides). */
  readonly config: Readonly<Record<string, unknown>>;
  readonly capabilities: LlmCapabilities;
  /** Set once load() has finished. */
  loadTiming: LoadTiming = { readMs: 0, readBytes: 0, mnnLoadMs: 0 };
  readonly #handle: NativeLlmHandle;
  readonly #queue = new SerialQueue();
  #lastStats: GenerationStats | undefined;
  #disposed: Promise<void> | undefined;

  private constructor(configPath: string, handle: NativeLlmHandle, config: Record<string, unknown>) {
    this.configPath = configPath;
    this.#handle = handle;
    this.config = config;
    this.capabilities = {
      vision: config['is_visual'] === true,
      audio: config['is_audio'] === true,
      talker: config['has_talker'] === true,
    };
  }

  /**
   * Reads the config, refuses backends this MNN cannot run (MNN would fall back to CPU without a word), then
   * loads the weights on a worker thread.
   */
  static async load(configPath: string, options: LlmLoadOptions = {}): Promise<Llm> {
    if (typeof configPath !== 'string' || configPath.length === 0) {
      throw invalidParameter('configPath', 'a path to an MNN LLM config.json', configPath);
    }
    // reuse_kv: MNN keeps the KV cache between calls, and the addon erases what a new prompt does not share.
    let overrides: LlmConfigOverrides = { reuse_kv: true, ...checkOverrides(options.overrides) };
    const conversations = checkConversations(options.conversations);
    const addon = options.addon ?? createAddonLoader().load();
    let handle = Llm.#open(addon, configPath, overrides);
    try {
      let config = JSON.parse(handle.configJson()) as Record<string, unknown>;
      const safer = archSafeOverrides(config, overrides);
      if (safer !== undefined) {
        // Opening reads only the config (the weights load below), so a second open costs nothing.
        await handle.dispose();
        overrides = { ...overrides, ...safer };
        handle = Llm.#open(addon, configPath, overrides);
        config = JSON.parse(handle.configJson()) as Record<string, unknown>;
      }
      const llm = new Llm(configPath, handle, config);
      addon.checkBackend(String(config['backend_type'] ?? 'cpu'), `the LLM of ${configPath}`);
      if (llm.capabilities.vision || llm.capabilities.audio) {
        const mllm = (config['mllm'] ?? {}) as Record<string, unknown>;
        addon.checkBackend(
          String(mllm['backend_type'] ?? 'cpu'),
          `the vision/audio encoder of ${configPath}`,
        );
      }
      const t = await handle.load(weightFiles(configPath, config));
      llm.loadTiming = { readMs: t.readUs / 1000, readBytes: t.readBytes, mnnLoadMs: t.loadUs / 1000 };
      if (conversations) {
        const prepared = await llm.#setConversations(conversations);
        if (conversations.prepare) llm.loadTiming.contextsMs = prepared.prepareUs / 1000;
      }
      return llm;
    } catch (err) {
      await handle.dispose().catch(() => {});
      throw fromNative(err);
    }
  }

  static #open(addon: EngineAddon, configPath: string, overrides: LlmConfigOverrides): NativeLlmHandle {
    try {
      return new addon.LlmHandle(configPath, JSON.stringify(overrides));
    } catch (err) {
      throw fromNative(err);
    }
  }

  /** Stats of the last finished generation. */
  get lastStats(): GenerationStats | undefined {
    return this.#lastStats;
  }

  get disposed(): boolean {
    return this.#disposed !== undefined;
  }

  generate(input: string | ChatMessage[], options: GenerateOptions = {}): LlmGeneration {
    this.#assertLive('generate');
    const defaultMax = Number(this.config['max_new_tokens'] ?? 512);
    const maxNewTokens = options.maxNewTokens ?? defaultMax;
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
      throw invalidParameter('maxNewTokens', 'a positive integer', options.maxNewTokens);
    }
    const request = buildPrefillRequest(
      {
        input,
        maxNewTokens,
        applyTemplate: options.applyTemplate ?? this.config['use_template'] !== false,
        ...(options.mediaTags === true ? { mediaTags: true } : {}),
        ...(options.mediaPlaced === true ? { mediaPlaced: true } : {}),
        ...(options.images ? { images: options.images } : {}),
        ...(options.audios ? { audios: options.audios } : {}),
      },
      { vision: this.capabilities.vision, audio: this.capabilities.audio, name: this.configPath },
    );
    const contextTokens = options.contextTokens ?? Number(this.config['max_position_embeddings'] ?? 0);
    if (!Number.isInteger(contextTokens) || contextTokens < 0) {
      throw invalidParameter('contextTokens', 'a non-negative integer', options.contextTokens);
    }
    request.reuse = options.reusePrefix !== false;
    request.mrope = this.config['is_mrope'] === true;
    request.contextTokens = contextTokens;
    request.prefillChunk = prefillChunkOf(this.config);
    const { readAhead, holdMs, decodeCpus } = checkDelivery(options);
    const signal = options.signal;
    const handle = this.#handle;
    const queue = this.#queue;
    const record = (stats: GenerationStats) => {
      this.#lastStats = stats;
    };
    return new LlmGeneration(
      async function* (settle, delivery) {
        const release = await queue.acquire();
        const onAbort = () => handle.cancel();
        const inbox = new BatchInbox();
        let text = '';
        let reason: FinishReason = 'aborted';
        let failed = false;
        let running = false;
        try {
          if (!signal?.aborted) {
            signal?.addEventListener('abort', onAbort, { once: true });
            delivery.startUs = monotonicUs();
            try {
              handle.generate(
                request,
                readAhead,
                inbox.put,
                holdMs * 1000,
                decodeCpus ? [...decodeCpus] : undefined,
              );
            } catch (err) {
              throw fromNative(err);
            }
            running = true;
            for (;;) {
              const batch = await inbox.take();
              recordBatch(delivery, batch);
              if (batch.done) running = false;
              if (batch.error) throw fromNative(batch.error);
              for (const piece of batch.pieces) text += piece;
              if (batch.pieces.length > 0) yield batch.pieces;
              if (batch.done) {
                reason = batch.reason ?? 'aborted';
                break;
              }
            }
          }
        } catch (err) {
          failed = true;
          throw err;
        } finally {
          signal?.removeEventListener('abort', onAbort);
          try {
            // Broken off early (the consumer stopped iterating) counts as aborted: the decode thread stops
            // within one token and the model is free once its last batch is in.
            if (running) {
              handle.cancel();
              for (;;) {
                const batch = await inbox.take();
                recordBatch(delivery, batch);
                if (batch.done) break;
              }
            }
            if (!failed) {
              const stats = { ...handle.stats(), finishReason: reason };
              record(stats);
              settle({ text, finishReason: reason, stats });
            }
          } finally {
            release();
          }
        }
      },
      (tokens) => handle.ack(tokens),
    );
  }

  /** Runs a generation to its end and returns the text with its stats. */
  complete(input: string | ChatMessage[], options: GenerateOptions = {}): Promise<GenerationResult> {
    return this.generate(input, options).complete();
  }

  /**
   * Speech out for models with a talker: PCM chunks pulled through a bounded native queue (8 chunks), so an
   * unread stream pauses the talker; the signal (or breaking off) stops it.
   */
  speak(options: SpeakOptions = {}): AsyncGenerator<SpeechChunk, void, undefined> {
    this.#assertLive('speak');
    const model = { configPath: this.configPath, config: this.config, talker: this.capabilities.talker };
    return speechStream(this.#handle, this.#queue, model, options);
  }

  /** How many conversations the instance keeps the KV of, within what bytes (ConversationOptions); lowering them
   *  drops extra contexts at once. An omni model keeps one (MNN makes extra contexts as plain LLMs). */
  async setConversations(options: ConversationOptions): Promise<PreparedContexts> {
    const checked = checkConversations(options);
    if (checked === undefined) throw invalidParameter('options', 'an object {max, budgetBytes}', options);
    return this.#setConversations(checked);
  }

  #setConversations(c: ConversationOptions): Promise<PreparedContexts> {
    const handle = this.#handle;
    const setter = handle.setConversations;
    if (setter === undefined) {
      return Promise.reject(
        new EngineError(
          'ENOTSUP',
          'Llm.setConversations: this engine build predates conversation contexts; rebuild it',
        ),
      );
    }
    const { vision, audio, talker } = this.capabilities;
    // One context on a GPU backend too: create_lora's clones of GPU executions are not verified on any here.
    const cpu = String(this.config['backend_type'] ?? 'cpu') === 'cpu';
    const limits = {
      max: vision || audio || talker || !cpu ? 1 : c.max,
      budgetBytes: c.budgetBytes,
      kvBytesPerToken: c.kvBytesPerToken ?? kvBytesPerTokenBound(this.config),
      llmModel: typeof this.config['llm_model'] === 'string' ? this.config['llm_model'] : 'llm.mnn',
      prepare: c.prepare === true,
    };
    return this.#call('setConversations', () => setter.call(handle, limits));
  }

  /**
   * Drops the KV of every conversation but the one in the instance's own context (memory is short: snapshots go
   * before any model is unloaded). Resolves with the bytes they were counted at (0 with an older addon).
   */
  async dropSnapshots(): Promise<number> {
    const handle = this.#handle;
    const drop = handle.dropSnapshots;
    if (drop === undefined) return 0;
    return this.#call('dropSnapshots', () => drop.call(handle));
  }

  /** Clears every conversation (KV cache and history). */
  async reset(): Promise<void> {
    return this.#call('reset', () => this.#handle.reset());
  }

  /** Drops history tokens [begin, end) from the KV cache; end 0 = up to the current length. */
  async eraseHistory(begin: number, end = 0): Promise<void> {
    if (!Number.isInteger(begin) || begin < 0)
      throw invalidParameter('begin', 'a non-negative integer', begin);
    if (!Number.isInteger(end) || end < 0) throw invalidParameter('end', 'a non-negative integer', end);
    return this.#call('eraseHistory', () => this.#handle.eraseHistory(begin, end));
  }

  async encode(text: string): Promise<Int32Array> {
    if (typeof text !== 'string') throw invalidParameter('text', 'a string', text);
    return this.#call('encode', () => this.#handle.encode(text));
  }

  async decode(ids: Int32Array | readonly number[]): Promise<string> {
    const arr = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.#call('decode', () => this.#handle.decode(arr));
  }

  /** Stops a running generation, waits for in-flight calls, frees the model. Idempotent. */
  dispose(): Promise<void> {
    if (!this.#disposed) {
      this.#handle.cancel();
      this.#disposed = this.#queue
        .run(() => this.#handle.dispose())
        .catch((err: unknown) => {
          throw fromNative(err);
        });
    }
    return this.#disposed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }

  #assertLive(what: string): void {
    if (this.#disposed) throw new EngineError('EDISPOSED', `Llm.${what}: the model was disposed`);
  }

  #call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    this.#assertLive(what);
    return this.#queue.run(fn).catch((err: unknown) => {
      throw fromNative(err);
    });
  }
}
