// Every way an update can be refused, as data: the device reports the reason over MQTT, the operator's tools
// count them, and tests assert them. A rejection always means nothing was installed and nothing from the
// offending document was trusted.
import { MnnEdgeError } from '../agent/common/errors.js';
import { escapeControl } from '../agent/common/sanitize.js';
export const REJECT_REASONS = [
    'malformed',
    'unknown-key',
    'bad-signature',
    'threshold',
    'rollback',
    'expired',
    'no-target',
    'length-mismatch',
    'hash-mismatch',
    'unsafe-archive',
    'manifest-mismatch',
    'root-chain',
    'slow-retrieval',
    'deadline',
    'too-large',
];
export class OtaRejection extends MnnEdgeError {
    reason;
    constructor(reason, message, details) {
        // Messages quote documents, servers and archives, and travel to terminals: no raw control characters.
        super('EOTAREJECT', escapeControl(message), { reason, ...details });
        this.name = 'OtaRejection';
        this.reason = reason;
    }
}
export function isRejection(err) {
    return err instanceof OtaRejection;
}
//# sourceMappingURL=rejection.js.map