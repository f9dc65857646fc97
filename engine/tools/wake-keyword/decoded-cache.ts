// Decoded real audio kept on disk for the keyword generator (real-negatives.ts): recipe 7 joins many one-word
// speech files (Tux Paint's stamp names, KTuberling's and KLettres' words) into each window, and on the shared
// host every ffmpeg start costs about 0.8 s, more than the decoding itself. A file decoded once is written as raw
// float32 (the decoder's own samples, so a later recipe draws exactly the same audio) under
// `<wake-audio cache>/decoded/<source>/<path>.f32`, beside the `audio/` tree real-fetch.ts fills.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { decodeAudioFile } from '../../../lib/audio/decode-file.js';
import { concat } from './speech.js';

/** Where the decoded copy of `path` goes, or undefined for a file outside the cache's `audio/` tree. */
export function decodedPath(path: string, cache: string): string | undefined {
  const rel = relative(join(cache, 'audio'), path);
  if (rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return join(cache, 'decoded', `${rel}.f32`);
}

/** The whole file as 16 kHz mono samples: from the decoded copy when there is one, else decoded and kept. */
export async function decodeKept(path: string, cache: string): Promise<Float32Array> {
  const kept = decodedPath(path, cache);
  if (kept && existsSync(kept)) {
    const bytes = readFileSync(kept);
    // Copied into an aligned buffer: a Buffer from the pool may start at any byte.
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }
  const parts: Float32Array[] = [];
  for await (const c of decodeAudioFile(path)) parts.push(c);
  const audio = concat(parts);
  if (kept) {
    mkdirSync(dirname(kept), { recursive: true });
    const partial = `${kept}.partial-${process.pid}`;
    writeFileSync(partial, new Uint8Array(audio.buffer, audio.byteOffset, audio.byteLength));
    renameSync(partial, kept);
  }
  return audio;
}
