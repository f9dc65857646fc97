import { MnnEdgeError } from '../common/errors.js';
import { BACKEND_TYPES } from '../plan/types.js';
// A pin names a backend in this board's words: an unknown name is answered with what this board offers, and a
// backend whose evidence chain failed (no device, loader missing, init probe failed) is refused with that step,
// before anything is written, so a refused pin changes nothing.
/** Backends a pin may name here: usable ones first, then those known but unusable (with why). */
export function pinnableBackends(board) {
    const usable = board.backends.filter((b) => b.available).map((b) => b.backend);
    if (!usable.includes('cpu'))
        usable.unshift('cpu');
    const unusable = board.backends
        .filter((b) => !b.available && b.backend !== 'cpu')
        .map((b) => `${b.backend} (${b.failedStep ? b.failedStep.detail : b.reason})`);
    return { usable, unusable };
}
/** Throws EINVAL for an unknown backend (naming this board's values) and EBACKEND for one whose chain failed. */
export function assertPinBackend(slot, value, board) {
    if (value === null || typeof value !== 'object')
        return;
    const backend = value.backend;
    if (backend === undefined)
        return;
    const { usable, unusable } = pinnableBackends(board);
    const known = typeof backend === 'string' && BACKEND_TYPES.includes(backend);
    if (!known)
        throw new MnnEdgeError('EINVAL', `Unknown backend_type ${JSON.stringify(backend)} in the pin for ${slot}: this board allows ${usable.join(', ')}` +
            (unusable.length ? `; known but unusable here: ${unusable.join('; ')}` : ''), { allowed: usable });
    const entry = board.backends.find((b) => b.backend === backend);
    if (entry && !entry.available && entry.failedStep)
        throw new MnnEdgeError('EBACKEND', `Pin of ${slot} to ${backend} refused: its ${entry.failedStep.step} step failed: ${entry.failedStep.detail}. Nothing was changed`, { step: entry.failedStep.step });
}
//# sourceMappingURL=pin-check.js.map