// Counting signatures over a document's canonical bytes, shared by the targets and root roles: a signature
// counts once per distinct trusted key, and only keys of the role being checked count at all.

import type { PublicKeyInfo } from './keys.js';
import { verifyBytes } from './keys.js';
import { OtaRejection } from './rejection.js';
import type { Signature } from './targets.js';

export interface SignatureCount {
  valid: Set<string>;
  invalid: string[];
  unknown: string[];
}

export function countSignatures(
  signatures: readonly Signature[],
  bytes: Uint8Array,
  keys: readonly PublicKeyInfo[],
): SignatureCount {
  const valid = new Set<string>();
  const invalid: string[] = [];
  const unknown: string[] = [];
  for (const s of signatures) {
    const key = keys.find((k) => k.keyId === s.keyid);
    if (!key) unknown.push(s.keyid);
    else if (verifyBytes(key.key, bytes, s.sig)) valid.add(s.keyid);
    else invalid.push(s.keyid);
  }
  return { valid, invalid, unknown };
}

const short = (id: string) => id.slice(0, 12);

/**
 * Throws the most specific rejection when fewer than `threshold` keys signed. `what` starts the message:
 * "Targets" (plural) or "Root version 3" (singular).
 */
export function requireThreshold(
  count: SignatureCount,
  threshold: number,
  what: string,
  plural = false,
): void {
  if (count.valid.size >= threshold) return;
  const [is, has] = plural ? ['are', 'have'] : ['is', 'has'];
  if (count.invalid.length > 0) {
    throw new OtaRejection(
      'bad-signature',
      `${what} signature by key ${count.invalid.map(short).join(', ')} does not verify`,
      { invalid: count.invalid },
    );
  }
  if (count.valid.size === 0) {
    throw new OtaRejection(
      'unknown-key',
      count.unknown.length > 0
        ? `${what} ${is} signed only by unknown key(s) ${count.unknown.map(short).join(', ')}`
        : `${what} document carries no signatures`,
      { unknown: count.unknown },
    );
  }
  throw new OtaRejection(
    'threshold',
    `${what} ${has} ${count.valid.size} valid signature(s) from trusted keys; ${threshold} required`,
    { valid: count.valid.size, threshold },
  );
}
