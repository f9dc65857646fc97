// Field checks and audio-out helpers shared by the Wyoming connection's flows.
import { WorkloadError } from '../shared/errors.js';
import type { WyomingAudioOut } from './audio.js';
import type { WyomingEvent } from './codec.js';

/** A text field of an event, or EFRAME naming the event and the field. */
export function textField(e: WyomingEvent, field: string): string {
  const text = e.data[field];
  if (typeof text !== 'string') throw new WorkloadError('EFRAME', `${e.type}.${field} must be a string`);
  return text;
}

/** ETOOLARGE when a text is over wyoming.maxTextChars. */
export function checkTextLength(chars: number, max: number): void {
  if (chars > max)
    throw new WorkloadError(
      'ETOOLARGE',
      `Text of ${chars} characters is over the limit of ${max} (wyoming.maxTextChars)`,
    );
}

/** The format announced for an output stream: its first chunk's rate, 16-bit mono. */
export function outFormat(out: WyomingAudioOut, rate: number): Record<string, number> {
  out.rate ??= rate;
  return { rate: out.rate, width: 2, channels: 1 };
}

/** One audio-chunk of the stream's PCM (nothing for an empty one). */
export async function sendAudio(
  send: (event: WyomingEvent) => Promise<void>,
  out: WyomingAudioOut,
  pcm: Buffer,
): Promise<void> {
  if (pcm.length === 0) return;
  await send({ type: 'audio-chunk', data: { rate: out.rate!, width: 2, channels: 1 }, payload: pcm });
}
