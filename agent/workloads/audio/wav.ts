// WAV files in the workloads: lib/audio/wav reads and writes them; a file it refuses is the caller's fault
// (EAUDIO, with the reader's message).
import { type DecodedAudio, parseWav as readWav, WavFormatError } from '../../../lib/audio/wav.js';
import { WorkloadError } from '../shared/errors.js';

export { type DecodedAudio, encodeWavS16, wavHeader } from '../../../lib/audio/wav.js';

export function parseWav(bytes: Uint8Array): DecodedAudio {
  try {
    return readWav(bytes);
  } catch (err) {
    if (err instanceof WavFormatError) throw new WorkloadError('EAUDIO', err.message);
    throw err;
  }
}
