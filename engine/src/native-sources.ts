// The digest of the addon's C++ sources, computed as engine/scripts/native-sources.cmake computes the one it
// compiles into the addon. The loader compares the two: an addon built from another checkout's sources (a stale
// engine/build, MNN_EDGE_ENGINE_ADDON pointing at an older build) would otherwise be driven with calls it does
// not have, which can crash the process instead of failing.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** undefined when the sources are not shipped (nothing to compare with). */
export function nativeSourcesDigest(dir: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cc') || f.endsWith('.h'))
    .sort();
  if (files.length === 0) return undefined;
  return sha256(files.map((f) => `${f}:${sha256(readFileSync(join(dir, f)))}\n`).join(''));
}
