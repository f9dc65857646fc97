// Ed25519 keys for signing targets documents. A key is named by its id: the hex sha256 of the raw 32-byte public
// key, so a configuration cannot pair a key id with a different key, and ids can be derived instead of trusted.

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  sign as cryptoSign,
  verify as cryptoVerify,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { MnnEdgeError } from '../../lib/errors.js';

// DER SubjectPublicKeyInfo prefix for an Ed25519 key (RFC 8410): the 32 key bytes follow.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface PublicKeyInfo {
  keyId: string;
  /** base64 of the raw 32-byte key: short enough to paste into a config file. */
  publicKey: string;
  key: KeyObject;
}

export interface GeneratedKeyPair extends PublicKeyInfo {
  privateKeyPem: string;
}

export function rawPublicKey(key: KeyObject): Buffer {
  const der = key.export({ type: 'spki', format: 'der' });
  return der.subarray(ED25519_SPKI_PREFIX.length);
}

export function keyIdOf(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex');
}

export function generateSigningKey(): GeneratedKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  return {
    keyId: keyIdOf(raw),
    publicKey: raw.toString('base64'),
    key: publicKey,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** Accepts base64 of the raw 32 bytes (what keygen prints) or a PEM SubjectPublicKeyInfo. */
export function parsePublicKey(text: string): PublicKeyInfo {
  const trimmed = text.trim();
  let key: KeyObject;
  if (trimmed.startsWith('-----BEGIN')) {
    try {
      key = createPublicKey(trimmed);
    } catch (err) {
      throw new MnnEdgeError('EKEY', `Invalid PEM public key: ${(err as Error).message}`);
    }
  } else {
    const raw = Buffer.from(trimmed, 'base64');
    if (raw.length !== 32 || raw.toString('base64') !== trimmed) {
      throw new MnnEdgeError(
        'EKEY',
        `Invalid ed25519 public key: expected base64 of 32 bytes, got ${JSON.stringify(trimmed.slice(0, 20))}`,
      );
    }
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new MnnEdgeError(
      'EKEY',
      `Expected an ed25519 public key, got ${key.asymmetricKeyType ?? 'unknown'}`,
    );
  }
  const raw = rawPublicKey(key);
  return { keyId: keyIdOf(raw), publicKey: raw.toString('base64'), key };
}

export interface SigningKey {
  keyId: string;
  key: KeyObject;
}

export function parsePrivateKey(pem: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (err) {
    throw new MnnEdgeError('EKEY', `Invalid PEM private key: ${(err as Error).message}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new MnnEdgeError(
      'EKEY',
      `Expected an ed25519 private key, got ${key.asymmetricKeyType ?? 'unknown'}`,
    );
  }
  return { keyId: keyIdOf(rawPublicKey(createPublicKey(key))), key };
}

export function signBytes(key: KeyObject, data: Uint8Array): string {
  return cryptoSign(null, data, key).toString('base64');
}

export function verifyBytes(key: KeyObject, data: Uint8Array, signatureBase64: string): boolean {
  const sig = Buffer.from(signatureBase64, 'base64');
  if (sig.length !== 64) return false;
  try {
    return cryptoVerify(null, data, key, sig);
  } catch {
    return false;
  }
}
