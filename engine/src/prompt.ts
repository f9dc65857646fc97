// Turns the public generate() input (text or chat messages, images, audios) into the request the addon takes.
// Media become MNN MultimodalPrompt parts that the addon decodes and checks itself; inline `<img>PATH</img>` and
// `<audio>PATH</audio>` tags (MNN's own prompt syntax) become checked parts too, so a missing file is an error
// instead of being dropped from the prompt silently, as MNN would do. Only a caller that opts in gets that: text
// from users (the OpenAI API, Wyoming, the dashboard) must not be able to name files, or with MNN's HTTP support
// URLs, for the engine to open, so by default every media tag in the text is made inert.
import { invalidParameter } from '../../lib/errors.js';
import { EngineError } from './errors.js';
import type { NativeAudioPart, NativeImagePart, NativePrefillRequest } from './native.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

/** A file path (PNG/JPEG/BMP…) or decoded RGB bytes, row-major HWC, 3 channels. */
export type ImageInput = string | { data: Uint8Array; width: number; height: number };
/** A WAV file path, or mono float PCM (16 kHz unless `sampleRate` says otherwise; resampled linearly). */
export type AudioInput = string | { samples: Float32Array; sampleRate?: number };

export interface PromptInput {
  input: string | ChatMessage[];
  images?: ImageInput[];
  audios?: AudioInput[];
  maxNewTokens: number;
  applyTemplate: boolean;
  /** Read inline `<img>PATH</img>` / `<audio>PATH</audio>` tags as files to load (default: make them inert). */
  mediaTags?: boolean;
  /** The text already holds each image's and audio's placeholder (mediaPlaceholder) where it belongs. */
  mediaPlaced?: boolean;
}

export interface ModelMedia {
  vision: boolean;
  audio: boolean;
  name: string;
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);
const TAG = /<(img|audio)>([\s\S]*?)<\/\1>/g;
// Every tag MNN's Omni tokenizer reads as media (kOmniMultimodalRegex); video has no checked part here.
const MNN_MEDIA_TAG = /<(\/?)(img|audio|video)>/g;
const MNN_VIDEO_TAG = /<(\/?)(video)>/g;

/** `<img>` → `< img>`: the model still sees the words, MNN no longer sees a tag. */
export function inertMediaTags(text: string, pattern: RegExp = MNN_MEDIA_TAG): string {
  return text.replace(pattern, '< $1$2>');
}

/**
 * Where the `index`-th image or audio of a request goes in a prompt the caller rendered itself (mediaPlaced): MNN's
 * Omni reads `<img>KEY</img>` / `<audio>KEY</audio>` in the prompt text and puts the media's tokens there.
 */
export function mediaPlaceholder(kind: 'image' | 'audio', index: number): string {
  return kind === 'image' ? `<img>mnn-edge-image-${index}</img>` : `<audio>mnn-edge-audio-${index}</audio>`;
}

/**
 * A rendered prompt with its media placed by the caller: each placeholder must be there exactly once (a missing
 * one would drop the media silently, a repeated one encode it twice), and every other media tag is made inert.
 */
function placedText(text: string, placeholders: readonly string[]): string {
  for (const [i, p] of placeholders.entries()) {
    const count = text.split(p).length - 1;
    if (count !== 1)
      throw invalidParameter(
        'input',
        `a prompt that holds media placeholder ${i} (${p}) exactly once (mediaPlaced)`,
        `${count} times`,
      );
  }
  if (placeholders.length === 0) return inertMediaTags(text);
  const split = new RegExp(placeholders.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  let out = '';
  let at = 0;
  for (const m of text.matchAll(split)) {
    out += inertMediaTags(text.slice(at, m.index)) + m[0];
    at = m.index + m[0].length;
  }
  return out + inertMediaTags(text.slice(at));
}

function imagePart(key: string, image: ImageInput, index: number): NativeImagePart {
  if (typeof image === 'string') {
    if (image.length === 0) throw invalidParameter(`images[${index}]`, 'a non-empty file path', image);
    return { key, path: image };
  }
  if (
    image === null ||
    typeof image !== 'object' ||
    !(image.data instanceof Uint8Array) ||
    !Number.isInteger(image.width) ||
    !Number.isInteger(image.height)
  ) {
    throw invalidParameter(`images[${index}]`, 'a path or {data: Uint8Array, width, height}', image);
  }
  return { key, data: image.data, width: image.width, height: image.height };
}

function audioPart(key: string, audio: AudioInput, index: number): NativeAudioPart {
  if (typeof audio === 'string') {
    if (audio.length === 0) throw invalidParameter(`audios[${index}]`, 'a non-empty file path', audio);
    return { key, path: audio };
  }
  if (audio === null || typeof audio !== 'object' || !(audio.samples instanceof Float32Array)) {
    throw invalidParameter(`audios[${index}]`, 'a path or {samples: Float32Array, sampleRate?}', audio);
  }
  const sampleRate = audio.sampleRate ?? 16000;
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) {
    throw invalidParameter(`audios[${index}].sampleRate`, 'a positive integer', audio.sampleRate);
  }
  return { key, samples: audio.samples, sampleRate };
}

export function buildPrefillRequest(p: PromptInput, model: ModelMedia): NativePrefillRequest {
  const images = (p.images ?? []).map((img, i) => imagePart(`mnn-edge-image-${i}`, img, i));
  const audios = (p.audios ?? []).map((a, i) => audioPart(`mnn-edge-audio-${i}`, a, i));
  // Placeholders go before the text, as in `<img>PATH</img>Hello`.
  const prefix =
    images.map((img) => `<img>${img.key}</img>`).join('') +
    audios.map((a) => `<audio>${a.key}</audio>`).join('');

  const inert = (content: string) => inertMediaTags(content, p.mediaTags ? MNN_VIDEO_TAG : MNN_MEDIA_TAG);
  let text: string | undefined;
  let messages: Array<[string, string]> | undefined;
  if (p.mediaPlaced) {
    if (typeof p.input !== 'string')
      throw invalidParameter('input', 'a rendered prompt string when mediaPlaced is set', p.input);
    if (p.mediaTags) throw invalidParameter('mediaTags', 'off when mediaPlaced is set', p.mediaTags);
    text = placedText(p.input, [
      ...images.map((_, i) => mediaPlaceholder('image', i)),
      ...audios.map((_, i) => mediaPlaceholder('audio', i)),
    ]);
  } else if (typeof p.input === 'string') {
    text = prefix + inert(p.input);
  } else if (Array.isArray(p.input)) {
    if (p.input.length === 0) throw invalidParameter('messages', 'at least one message', p.input);
    const lastUser = p.input.map((m) => m?.role).lastIndexOf('user');
    messages = p.input.map((m, i): [string, string] => {
      if (m === null || typeof m !== 'object' || !ROLES.has(m.role) || typeof m.content !== 'string') {
        throw invalidParameter(`messages[${i}]`, '{role: system|user|assistant|tool, content: string}', m);
      }
      return [m.role, i === lastUser ? prefix + inert(m.content) : inert(m.content)];
    });
    if (prefix && lastUser < 0)
      throw invalidParameter('messages', 'a user message to attach media to', p.input);
  } else {
    throw invalidParameter('input', 'a prompt string or an array of chat messages', p.input);
  }

  // Inline tags name files directly: register each as a checked part keyed by its own text.
  const known = new Set([...images.map((i) => i.key), ...audios.map((a) => a.key)]);
  const contents = text !== undefined ? [text] : (messages ?? []).map((m) => m[1]);
  for (const content of contents) {
    for (const match of content.matchAll(TAG)) {
      const [, kind, ref] = match as unknown as [string, 'img' | 'audio', string];
      if (known.has(ref)) continue;
      known.add(ref);
      if (kind === 'img') images.push({ key: ref, path: ref });
      else audios.push({ key: ref, path: ref });
    }
  }
  if (images.length > 0 && !model.vision) {
    throw new EngineError(
      'EINVAL',
      `${model.name} has no vision encoder (is_visual is not set in its config): images cannot be used`,
    );
  }
  if (audios.length > 0 && !model.audio) {
    throw new EngineError(
      'EINVAL',
      `${model.name} has no audio encoder (is_audio is not set in its config): audios cannot be used`,
    );
  }
  return {
    ...(text !== undefined ? { text } : {}),
    ...(messages !== undefined ? { messages } : {}),
    applyTemplate: p.applyTemplate,
    maxNewTokens: p.maxNewTokens,
    images,
    audios,
  };
}
