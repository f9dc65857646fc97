// The shipped wake word by default (docs/WAKE.md "Shipped keyword"): on a board with a microphone, where the
// Debian package, the image or `mnn-edge models pull wake` put the assembled keyword, slot voice.wake names it
// unless the configuration (file, run-time settings or flags) names a model for that slot itself. Without a
// microphone nothing changes: the slot stays empty, as before.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findShippedWake } from '../../models/wake-shipped/locate.js';
import { isPlainObject, type JsonObject } from './sources.js';

/**
 * Whether the board has a microphone: the configuration reads one through ALSA, or ALSA lists a capture
 * device (`/proc/asound/pcm`, under the configured root so a captured board tree answers for its board).
 */
export function microphonePresent(raw: JsonObject): boolean {
  const voice = isPlainObject(raw['voice']) ? raw['voice'] : {};
  const input = isPlainObject(voice['input']) ? voice['input'] : {};
  if (input['source'] === 'alsa') return true;
  const root = typeof raw['root'] === 'string' ? raw['root'] : '/';
  const pcm = join(root, 'proc', 'asound', 'pcm');
  if (!existsSync(pcm)) return false;
  try {
    return /:\s*capture \d+/.test(readFileSync(pcm, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * The defaults the shipped keyword adds to this configuration: `{slots: {"voice.wake": {model}}}` when a
 * microphone is present, the keyword is shipped here, and nothing names a model for voice.wake; else `{}`.
 */
export function shippedWakeDefaults(raw: JsonObject, env: NodeJS.ProcessEnv = process.env): JsonObject {
  const slots = isPlainObject(raw['slots']) ? raw['slots'] : {};
  if (slots['voice.wake'] !== undefined || !microphonePresent(raw)) return {};
  const shipped = findShippedWake(env);
  return shipped ? { slots: { 'voice.wake': { model: shipped.id } } } : {};
}
