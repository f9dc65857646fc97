import { HttpError } from '../common/http-error.js';
import { BACKEND_TYPES } from '../plan/types.js';
// The pin form's body, checked field by field so the page can show exactly which field was wrong.
const MODES = ['low', 'normal', 'high'];
const KEYS = ['version', 'variant', 'backend', 'threads', 'precision', 'memory'];
const TEXT = /^[A-Za-z0-9_.+-]{1,64}$/;
function bad(message) {
    return new HttpError(400, 'invalid_pin', message);
}
export function parsePinBody(body) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw bad('Expected a JSON object with any of: ' + KEYS.join(', '));
    }
    const input = body;
    const unknownKey = Object.keys(input).find((k) => !KEYS.includes(k));
    if (unknownKey !== undefined)
        throw bad(`Unknown pin field ${JSON.stringify(unknownKey)}; allowed: ${KEYS.join(', ')}`);
    const out = {};
    for (const key of ['version', 'variant']) {
        const v = input[key];
        if (v === undefined)
            continue;
        if (typeof v !== 'string' || !TEXT.test(v))
            throw bad(`${key} must be 1-64 characters of A-Z a-z 0-9 _ . + -`);
        out[key] = v;
    }
    if (input['backend'] !== undefined) {
        const v = input['backend'];
        if (typeof v !== 'string' || !BACKEND_TYPES.includes(v)) {
            throw bad(`backend must be one of ${BACKEND_TYPES.join(', ')}`);
        }
        out.backend = v;
    }
    if (input['threads'] !== undefined) {
        const v = input['threads'];
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 64)
            throw bad('threads must be an integer from 1 to 64');
        out.threads = v;
    }
    for (const key of ['precision', 'memory']) {
        const v = input[key];
        if (v === undefined)
            continue;
        if (typeof v !== 'string' || !MODES.includes(v))
            throw bad(`${key} must be one of ${MODES.join(', ')}`);
        out[key] = v;
    }
    if (Object.keys(out).length === 0)
        throw bad('A pin needs at least one field: ' + KEYS.join(', '));
    return out;
}
//# sourceMappingURL=placement-input.js.map