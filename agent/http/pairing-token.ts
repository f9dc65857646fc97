import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';

// The pairing token is the device's one shared secret with its owner: printed by `mnn-edge token` (root on the
// board), typed once into the dashboard's login or used as a bearer token by API clients. 32 random bytes give
// 256 bits, far beyond any online guessing; the login rate limit is for log noise and CPU, not for the odds.

export const PAIRING_TOKEN_FILE = 'pairing-token';
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43,}$/;

export function pairingTokenPath(dataDir: string): string {
  return join(dataDir, PAIRING_TOKEN_FILE);
}

export function generatePairingToken(): string {
  return randomBytes(32).toString('base64url');
}

export function readPairingToken(dataDir: string): string | undefined {
  const path = pairingTokenPath(dataDir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new MnnEdgeError('ETOKEN', `Cannot read the pairing token ${path}: ${(err as Error).message}`);
  }
  const token = text.trim();
  if (!TOKEN_PATTERN.test(token)) {
    throw new MnnEdgeError(
      'ETOKEN',
      `Pairing token file ${path} does not hold a base64url token of at least 43 characters; delete it to create a new one`,
    );
  }
  return token;
}

/** Read the token, creating it (0600, durable) on first start. Tightens a file that became group/world readable. */
export function ensurePairingToken(dataDir: string): { token: string; created: boolean; path: string } {
  const path = pairingTokenPath(dataDir);
  const existing = readPairingToken(dataDir);
  if (existing !== undefined) {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    return { token: existing, created: false, path };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = generatePairingToken();
  writeFileDurable(path, `${token}\n`, 0o600);
  // The umask cannot widen an explicit mode, but an inherited ACL or an odd umask could narrow it oddly: be exact.
  chmodSync(path, 0o600);
  return { token, created: true, path };
}

/** Replace the token (durably, 0600). Every session cookie dies with it: their signing key derives from the token. */
export function rotatePairingToken(dataDir: string): { token: string; path: string } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = pairingTokenPath(dataDir);
  const token = generatePairingToken();
  writeFileDurable(path, `${token}\n`, 0o600);
  chmodSync(path, 0o600);
  return { token, path };
}
