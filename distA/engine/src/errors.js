// Errors from the engine carry a stable `code`; messages name the MNN call and the file involved.
import { MnnEdgeError } from '../../agent/common/errors.js';
export class EngineError extends MnnEdgeError {
    constructor(code, message, details, options) {
        super(code, message, details, options);
        this.name = 'EngineError';
    }
}
/** Native errors arrive as plain Errors with `code`; this gives them the engine's class without changing text. */
export function fromNative(err) {
    if (err instanceof EngineError)
        return err;
    if (err instanceof Error) {
        const code = err.code;
        return new EngineError(typeof code === 'string' ? code : 'EENGINE', err.message, undefined, {
            cause: err,
        });
    }
    return new EngineError('EENGINE', String(err));
}
//# sourceMappingURL=errors.js.map