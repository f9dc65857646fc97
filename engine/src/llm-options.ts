// What a caller may ask of an Llm: MNN's config keys to override, the load options, and the options of one
// generation with their bounds (checked by Llm.generate).
import { invalidParameter } from '../../lib/errors.js';
import type { BackendName, EngineAddon } from './native.js';
import type { AudioInput, ImageInput } from './prompt.js';

type Level = 'low' | 'normal' | 'high';

/** MNN's own config keys (config.json / llm_config.json), applied over the model's files with set_config. */
export interface LlmConfigOverrides {
  backend_type?: BackendName;
  thread_num?: number;
  precision?: Level;
  memory?: Level;
  power?: Level;
  attention_mode?: number;
  use_mmap?: boolean;
  max_new_tokens?: number;
  sampler_type?: string;
  mixed_samplers?: string[];
  temperature?: number;
  topK?: number;
  topP?: number;
  penalty?: number;
  /** MNN's prefill chunk in tokens (0: none); see arm82ExactChunk. */
  chunk?: number;
  mllm?: {
    backend_type?: BackendName;
    thread_num?: number;
    precision?: Level;
    memory?: Level;
    power?: Level;
  };
  [key: string]: unknown;
}

/**
 * Conversation snapshots: how many conversations an instance keeps the KV of at once, so that conversations that
 * interleave on it (voice, Wyoming, the OpenAI API on one slot) each keep their prefix. Each extra conversation
 * has a context of its own on the instance's weights; they are dropped least recently used first to stay within
 * `budgetBytes`. Text-only models: MNN makes extra contexts as plain LLMs, without an omni model's encoders or
 * talker.
 */
export interface ConversationOptions {
  /** Conversations kept at once, the instance's own context included (1: snapshots off). */
  max: number;
  /** Bytes the extra contexts may hold together: what making each took, plus its KV. */
  budgetBytes: number;
  /**
   * One token's KV in bytes (all layers, K and V). Default: an upper bound from the config, layer_nums × 2 ×
   * hidden_size × 4 (fp32, no grouped-query sharing); the catalog's figure is closer where it has one.
   */
  kvBytesPerToken?: number;
  /**
   * Make the extra contexts at load (as many as `max` and the budget allow) instead of on a new conversation's
   * first turn: MNN's create_lora takes about as long as the model's own load on a graph with its weights inline,
   * which that turn would otherwise wait for. Empty contexts hold what making them took, not a KV.
   */
  prepare?: boolean;
}

/** Upper bound of ConversationOptions.max. */
export const MAX_CONVERSATIONS = 64;

export interface LlmLoadOptions {
  overrides?: LlmConfigOverrides;
  /** Keep several conversations' KV on the instance (default: one). */
  conversations?: ConversationOptions;
  /** The loaded addon; by default the one engine/build holds. */
  addon?: EngineAddon;
}

export interface GenerateOptions {
  /** Upper bound on generated tokens; defaults to the config's max_new_tokens. */
  maxNewTokens?: number;
  images?: ImageInput[];
  audios?: AudioInput[];
  signal?: AbortSignal;
  /** Wrap a string prompt in the model's chat template (default: the config's use_template, true). */
  applyTemplate?: boolean;
  /**
   * Read MNN's inline `<img>PATH</img>` / `<audio>PATH</audio>` tags in the text as files to load. Off by default:
   * the tags are then made inert, because text that came from a user must not name files on the board.
   */
  mediaTags?: boolean;
  /**
   * The prompt is a string the caller rendered itself (its template off), with each image's and audio's
   * placeholder (`mediaPlaceholder('image', i)`: `<img>mnn-edge-image-i</img>`) where the media belongs, e.g. in
   * the last user turn of a conversation rendered with tools. Each must be there exactly once; no placeholder is
   * added in front, and every other media tag in the text is made inert, as without it.
   */
  mediaPlaced?: boolean;
  /**
   * Tokens the decode thread may decode ahead of the consumer (default 1: the next token decodes while the
   * consumer handles this one). More lets a bursty consumer take tokens in batches; an abort still stops the
   * decoding within one token, but up to this many decoded tokens may still arrive after it.
   */
  readAhead?: number;
  /**
   * Milliseconds decoded tokens may wait on the decode thread to be handed over together (default 0: each one
   * as soon as the consumer is idle). Waking the JS thread for every token costs the decode step CPU time on a
   * small machine; with a read-ahead above 1, holding a few milliseconds turns that into one wake per batch.
   * The first token is never held, nor one whose next token is not due within the hold (the last decode step
   * taken longer than what is left of it: only the next token hands a held one over, so it would wait a whole step),
   * and nothing is held once the read-ahead is used up.
   */
  handoverHoldMs?: number;
  /**
   * Logical CPUs the decode thread runs on (default: wherever the process may run). On a big.LITTLE board, a big
   * core; in a benchmark, the core the baseline runs on. The rest of the process (its JS thread) is not moved.
   */
  decodeCpus?: readonly number[];
  /**
   * Keep the KV cache of the prompt's longest common token prefix with what the model holds from its last
   * generation, and prefill only the rest (default true; the outcome is in `stats.reuse`). Off: the whole prompt
   * is prefilled, as a first turn is. Greedy output is the same either way.
   */
  reusePrefix?: boolean;
  /**
   * The context in tokens: a prompt of this many tokens or more fails with ECONTEXT, with or without reuse
   * (default: the config's max_position_embeddings; 0: unchecked).
   */
  contextTokens?: number;
}

/** Upper bound of GenerateOptions.handoverHoldMs. */
export const MAX_HANDOVER_HOLD_MS = 1000;

/** The highest logical CPU id a CPU list may name (glibc's CPU_SETSIZE - 1). */
export const MAX_CPU_ID = 1023;

/** Upper bound of GenerateOptions.readAhead: enough to cover any consumer hiccup, small next to a KV cache. */
export const MAX_READ_AHEAD = 256;

export function checkOverrides(overrides: unknown): LlmConfigOverrides {
  if (overrides === undefined) return {};
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
    throw invalidParameter('overrides', 'an object of MNN config keys', overrides);
  }
  for (const [k, v] of Object.entries(overrides)) {
    if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint' || v === undefined) {
      throw invalidParameter(`overrides.${k}`, 'a JSON value', v);
    }
  }
  return overrides as LlmConfigOverrides;
}

/**
 * The precision a vision/audio encoder or a graph model (MnnGraph: Silero VAD, wake word) runs at on this CPU architecture.
 * On arm64, `low` selects MNN's Arm82 fp16 backend. Silero VAD v5 scores every frame 0.002 there (at `normal` its
 * scores match x86 to 0.001). An encoder at `low` was seen corrupting the heap; that was the greedy sampler's
 * cross-backend copy (arm82SafeSampler, below), but encoders at `low` have not been checked through this engine
 * since, so they too run at `normal` (fp32 NEON) there; an LLM's decoder keeps `low`. docs/ENGINE.md has the runs.
 */
export function encoderPrecision(asked: Level | undefined, arch: string = process.arch): Level | undefined {
  return asked === 'low' && arch === 'arm64' ? 'normal' : asked;
}

/**
 * The sampler overrides that keep a decoder on MNN's Arm82 fp16 backend clear of the pinned MNN's (4d40bdbd7)
 * use-after-free, or undefined where none is needed. MNN's greedy sampler takes the argmax with an Express op in
 * a new session on the CPU runtime the model shares. After a generation's garbage collection that session's
 * buffer is the runtime's only one, and its first step, the fp16 → fp32 copy of the logits, runs on the model's
 * Arm82 backend, whose onCopyBuffer re-applies its own, larger allocation first: that reallocates the shared
 * buffer, freeing the new session's tensors, and the copy then writes the logits into the freed block
 * (Arm82Backend.cpp:111 → BufferAllocator.cpp:465-477 → Arm82Backend.cpp:178; it happens in every answer, and
 * Electric Fence stops there; unchecked it surfaces later as a SIGSEGV in malloc). A `mixed` sampler made of
 * `greedy` alone picks the same token (the first maximum) from a host copy of the logits (readMap), so no session
 * copies across backends. Only where that copy exists: the CPU backend at `low` on arm64 (fp32 logits elsewhere
 * need no copy), with MNN's greedy sampler (the default); other samplers already read the logits on the host.
 */
export function arm82SafeSampler(
  config: Readonly<Record<string, unknown>>,
  arch: string = process.arch,
): Pick<LlmConfigOverrides, 'sampler_type' | 'mixed_samplers'> | undefined {
  const backend = String(config['backend_type'] ?? 'cpu');
  const precision = config['precision'] ?? 'low';
  const sampler = config['sampler_type'] ?? 'greedy';
  if (arch !== 'arm64' || backend !== 'cpu' || precision !== 'low' || sampler !== 'greedy') return undefined;
  return { sampler_type: 'mixed', mixed_samplers: ['greedy'] };
}

/** The prefill chunk arm82ExactChunk sets: up to 31 held tokens are prefilled again per turn. */
export const ARM82_PREFILL_CHUNK = 32;

/**
 * MNN's prefill chunk that keeps conversation KV reuse exact on its Arm82 fp16 backend, or undefined where none is
 * needed. There, with quantized (int4/int8) weights, the activations are quantized over the tokens prefilled
 * together, so a turn that prefilled only its new tokens would round differently from a whole prefill of the
 * same prompt, and a greedy answer parts from it after some tokens (tiny-llm-int4 at `low`, docs/ENGINE.md). With
 * `chunk` set, MNN prefills in pieces of that many tokens from where the prefill starts, and the engine keeps KV
 * only up to a multiple of it (engine/native/prefix_reuse.h, AlignToChunk): a reused and a whole prefill then run
 * the same pieces at the same positions. It is set whatever the weights are, as fp16 kernels may also tile by
 * batch. Not for MNN's Omni models (vision, audio, a talker): Omni hands media embeddings to each prefill call from
 * the first, so a chunked prompt with media would take the wrong ones, and its talker collects the thinker's
 * outputs per forward, which chunks would split (not checked). A `chunk` the config or caller set is kept.
 */
export function arm82ExactChunk(
  config: Readonly<Record<string, unknown>>,
  arch: string = process.arch,
): Pick<LlmConfigOverrides, 'chunk'> | undefined {
  const backend = String(config['backend_type'] ?? 'cpu');
  const precision = config['precision'] ?? 'low';
  if (arch !== 'arm64' || backend !== 'cpu' || precision !== 'low') return undefined;
  const omni = config['is_visual'] === true || config['is_audio'] === true || config['has_talker'] === true;
  if (omni) return undefined;
  if (config['chunk'] !== undefined || config['chunk_limits'] !== undefined) return undefined;
  return { chunk: ARM82_PREFILL_CHUNK };
}

/** MNN's prefill chunk in a loaded config: `chunk`, or the largest of `chunk_limits` where that is set (0: none). */
export function prefillChunkOf(config: Readonly<Record<string, unknown>>): number {
  const limits = config['chunk_limits'];
  if (Array.isArray(limits) && limits.length >= 2 && limits.every((x) => Number.isInteger(x))) {
    return Math.max(0, ...(limits as number[]));
  }
  const chunk = config['chunk'];
  return typeof chunk === 'number' && Number.isInteger(chunk) && chunk > 0 ? chunk : 0;
}

/**
 * What this CPU architecture changes in a loaded config (encoderPrecision, arm82SafeSampler, arm82ExactChunk), or
 * undefined.
 */
export function archSafeOverrides(
  config: Readonly<Record<string, unknown>>,
  overrides: LlmConfigOverrides,
  arch: string = process.arch,
): LlmConfigOverrides | undefined {
  const extra: LlmConfigOverrides = {
    ...arm82SafeSampler(config, arch),
    ...(config['reuse_kv'] === false ? {} : arm82ExactChunk(config, arch)),
  };
  const encoder = config['mllm'] as { precision?: Level } | undefined;
  const safe = encoderPrecision(encoder?.precision, arch);
  if (encoder !== undefined && safe !== encoder.precision)
    extra.mllm = { ...overrides.mllm, precision: safe };
  return Object.keys(extra).length > 0 ? extra : undefined;
}

/** The delivery options of one generation (read-ahead window, hand-over hold, decode CPUs), checked. */
export function checkDelivery(options: GenerateOptions): {
  readAhead: number;
  holdMs: number;
  decodeCpus: readonly number[] | undefined;
} {
  const readAhead = options.readAhead ?? 1;
  if (!Number.isInteger(readAhead) || readAhead < 1 || readAhead > MAX_READ_AHEAD) {
    throw invalidParameter('readAhead', `an integer from 1 to ${MAX_READ_AHEAD}`, options.readAhead);
  }
  const holdMs = options.handoverHoldMs ?? 0;
  if (!Number.isFinite(holdMs) || holdMs < 0 || holdMs > MAX_HANDOVER_HOLD_MS) {
    throw invalidParameter(
      'handoverHoldMs',
      `a number from 0 to ${MAX_HANDOVER_HOLD_MS}`,
      options.handoverHoldMs,
    );
  }
  const decodeCpus = options.decodeCpus;
  if (
    decodeCpus !== undefined &&
    (!Array.isArray(decodeCpus) ||
      decodeCpus.length === 0 ||
      decodeCpus.length > MAX_CPU_ID + 1 ||
      !decodeCpus.every((c) => Number.isInteger(c) && c >= 0 && c <= MAX_CPU_ID))
  ) {
    throw invalidParameter('decodeCpus', `a non-empty list of CPU ids from 0 to ${MAX_CPU_ID}`, decodeCpus);
  }
  return { readAhead, holdMs, decodeCpus };
}

/** Checks ConversationOptions; undefined stays undefined. */
export function checkConversations(c: unknown): ConversationOptions | undefined {
  if (c === undefined) return undefined;
  if (c === null || typeof c !== 'object' || Array.isArray(c)) {
    throw invalidParameter('conversations', 'an object {max, budgetBytes, kvBytesPerToken?}', c);
  }
  const o = c as Record<string, unknown>;
  const max = o['max'];
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > MAX_CONVERSATIONS) {
    throw invalidParameter('conversations.max', `an integer from 1 to ${MAX_CONVERSATIONS}`, max);
  }
  const budget = o['budgetBytes'];
  if (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget < 0) {
    throw invalidParameter('conversations.budgetBytes', 'a non-negative integer', budget);
  }
  const perToken = o['kvBytesPerToken'];
  if (
    perToken !== undefined &&
    (typeof perToken !== 'number' || !Number.isSafeInteger(perToken) || perToken < 0)
  ) {
    throw invalidParameter('conversations.kvBytesPerToken', 'a non-negative integer', perToken);
  }
  const prepare = o['prepare'];
  if (prepare !== undefined && typeof prepare !== 'boolean') {
    throw invalidParameter('conversations.prepare', 'a boolean', prepare);
  }
  return {
    max,
    budgetBytes: budget,
    ...(perToken !== undefined ? { kvBytesPerToken: perToken as number } : {}),
    ...(prepare !== undefined ? { prepare } : {}),
  };
}

/** An upper bound of one token's KV from an MNN config: every layer's K and V at fp32, one head per query head. */
export function kvBytesPerTokenBound(config: Readonly<Record<string, unknown>>): number {
  const layers = Number(config['layer_nums'] ?? 0);
  const hidden = Number(config['hidden_size'] ?? 0);
  return Number.isFinite(layers) && Number.isFinite(hidden) ? Math.max(0, layers * 2 * hidden * 4) : 0;
}
