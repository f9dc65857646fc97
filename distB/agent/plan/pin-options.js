import { BACKEND_TYPES } from './types.js';
/**
 * What a pin may name on this board, for the dashboard's dropdown: every engine backend, usable ones first, the
 * others with the reason detection gave. Metal is left out: it exists only on Apple hardware.
 */
export function pinOptions(board) {
    const options = BACKEND_TYPES.filter((b) => b !== 'metal').map((backend) => {
        const found = board?.backends.find((b) => b.backend === backend);
        if (backend === 'cpu')
            return { backend, usable: true, reason: found?.reason || 'always available' };
        if (!found)
            return {
                backend,
                usable: false,
                reason: board ? 'not found on this board' : 'the board has not been detected yet',
            };
        return { backend, usable: found.available, reason: found.reason };
    });
    return [...options.filter((o) => o.usable), ...options.filter((o) => !o.usable)];
}
//# sourceMappingURL=pin-options.js.map