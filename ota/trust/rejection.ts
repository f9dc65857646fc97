// Every way an update can be refused, as data: the device reports the reason over MQTT, the operator's tools
// count them, and tests assert them. A rejection always means nothing was installed and nothing from the
// offending document was trusted.

import { DownloadRejection } from '../../lib/download/rejection.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { escapeControl } from '../../lib/sanitize.js';

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
] as const;

export type RejectReason = (typeof REJECT_REASONS)[number];

export class OtaRejection extends MnnEdgeError {
  readonly reason: RejectReason;
  constructor(reason: RejectReason, message: string, details?: Record<string, unknown>) {
    // Messages quote documents, servers and archives, and travel to terminals: no raw control characters.
    super('EOTAREJECT', escapeControl(message), { reason, ...details });
    this.name = 'OtaRejection';
    this.reason = reason;
  }
}

/** A refusal, of a document (OtaRejection) or of downloaded bytes (the downloader's, with a reason of the same list). */
export function isRejection(err: unknown): err is OtaRejection | DownloadRejection {
  return err instanceof OtaRejection || err instanceof DownloadRejection;
}
