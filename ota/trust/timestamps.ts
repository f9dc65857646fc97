// Expiry times in signed documents. The schema's pattern admits "2026-13-45T99:99:99Z", which Date.parse turns
// into NaN or silently rolls over; either way a verifier must call it malformed, never expired or valid.

export const ISO_UTC_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$';

/** Epoch ms of a UTC ISO time whose every field is in range, or undefined. */
export function parseIsoUtc(text: string): number | undefined {
  if (!new RegExp(ISO_UTC_PATTERN).test(text)) return undefined;
  const ms = Date.parse(text);
  if (!Number.isFinite(ms)) return undefined;
  // Round trip: rejects Feb 30, hour 24 and other values Date would normalise into a different instant.
  return new Date(ms).toISOString().slice(0, 19) === text.slice(0, 19) ? ms : undefined;
}

/** The time source the verifier needs; agent/time's TrustedTime satisfies it. */
export interface TimeSource {
  trustedNow(): number;
  clockStatus(): { synchronized: boolean; evidence: string };
}
