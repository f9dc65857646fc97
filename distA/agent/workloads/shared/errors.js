// Errors a workload caller can act on, each with a stable code: bad audio or frames are the caller's fault
// (EAUDIO, EFRAME), a missing engine or model is the device's (ENOENGINE, ENOMODEL), a full queue is load (EBUSY).
import { MnnEdgeError } from '../../common/errors.js';
export class WorkloadError extends MnnEdgeError {
    constructor(code, message, details, options) {
        super(code, message, details, options);
        this.name = 'WorkloadError';
    }
}
export function isAbort(err) {
    return ((err instanceof Error && (err.name === 'AbortError' || err.code === 'EABORT')) ||
        (err instanceof WorkloadError && err.code === 'ECANCELLED'));
}
//# sourceMappingURL=errors.js.map