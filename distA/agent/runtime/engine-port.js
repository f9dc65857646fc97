import { MnnEdgeError } from '../common/errors.js';
export class EngineFailure extends MnnEdgeError {
    kind;
    constructor(kind, message, options) {
        super(`E${kind.toUpperCase()}`, message, { kind }, options);
        this.name = 'EngineFailure';
        this.kind = kind;
    }
}
/** Failures that say the placement itself is bad, so the slot should move down its fallback chain. */
export function impliesFallback(err) {
    return (err instanceof EngineFailure && (err.kind === 'crash' || err.kind === 'load' || err.kind === 'backend'));
}
export function describeExit(exit) {
    return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}
//# sourceMappingURL=engine-port.js.map