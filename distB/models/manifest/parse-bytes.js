// A manifest read from a package's bytes (an archive entry or a staged file), under the shared input limits.
import { MnnEdgeError } from '../../agent/common/errors.js';
import { INPUT_LIMITS } from '../../agent/common/input-limits.js';
import { parseJsonInput } from '../../agent/common/json-input.js';
import { parseManifest } from './schema.js';
export function parseManifestBytes(bytes, source) {
    if (bytes.byteLength > INPUT_LIMITS.manifestMaxBytes)
        throw new MnnEdgeError('EMANIFEST', `Invalid manifest ${source}: ${bytes.byteLength} bytes, over the limit of ${INPUT_LIMITS.manifestMaxBytes}`);
    let raw;
    try {
        raw = parseJsonInput(bytes, `manifest ${source}`, { maxBytes: INPUT_LIMITS.manifestMaxBytes });
    }
    catch (err) {
        const e = err;
        const why = e.code === 'EBADJSON'
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
//# sourceMappingURL=parse-bytes.js.map