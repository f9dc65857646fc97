// A manifest read from a package's bytes (an archive entry or a staged file), under the shared input limits.

import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { parseJsonInput } from '../../lib/json-input.js';
import { parseManifest } from './schema.js';
import type { ModelManifest } from './types.js';

export function parseManifestBytes(bytes: Uint8Array, source: string): ModelManifest {
  if (bytes.byteLength > INPUT_LIMITS.manifestMaxBytes)
    throw new MnnEdgeError(
      'EMANIFEST',
      `Invalid manifest ${source}: ${bytes.byteLength} bytes, over the limit of ${INPUT_LIMITS.manifestMaxBytes}`,
    );
  let raw: unknown;
  try {
    raw = parseJsonInput(bytes, `manifest ${source}`, { maxBytes: INPUT_LIMITS.manifestMaxBytes });
  } catch (err) {
    const e = err as MnnEdgeError;
    const why =
      e.code === 'EBADJSON'
        ? `not valid JSON (${String(e.details?.['syntax'] ?? '')})`
        : e.code === 'EPAYLOAD'
          ? 'not valid UTF-8 text'
          : e.code === 'ETOODEEP'
            ? `nests deeper than ${INPUT_LIMITS.jsonMaxDepth} levels`
            : e.message;
    throw new MnnEdgeError('EMANIFEST', `Invalid manifest ${source}: ${why}`);
  }
  return parseManifest(raw, source);
}
