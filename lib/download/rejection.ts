// Every way the downloader refuses what a server sent, as data: the bytes were not what was promised (length,
// hash), came too slowly (slow-retrieval, deadline) or too many (too-large). Whatever was refused is gone from the
// disk. Callers map the refusal into their own terms: an OTA job reports the reason as its rejection reason, a hub
// pull as a verification failure.

import { MnnEdgeError } from '../errors.js';
import { escapeControl } from '../sanitize.js';

export const DOWNLOAD_REJECT_REASONS = [
  'length-mismatch',
  'hash-mismatch',
  'slow-retrieval',
  'deadline',
  'too-large',
] as const;

export type DownloadRejectReason = (typeof DOWNLOAD_REJECT_REASONS)[number];

export class DownloadRejection extends MnnEdgeError {
  readonly reason: DownloadRejectReason;
  constructor(reason: DownloadRejectReason, message: string, details?: Record<string, unknown>) {
    // Messages quote servers and URLs and travel to terminals: no raw control characters.
    super('EREJECTED', escapeControl(message), { reason, ...details });
    this.name = 'DownloadRejection';
    this.reason = reason;
  }
}
