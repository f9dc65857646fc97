// What a simulated rollout needs besides the boards: packages of a given size served over HTTP (ranges, like
// any server), a targets key the boards trust, and the signed targets document naming the packages. Several
// versions under one key let one fleet take rollout after rollout (a reference rollout, then the same rollout
// under faults, compared device by device).
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OtaTrustedKey } from '../../ota/config.js';
import { type PackageServer, servePackages } from '../../ota/tools/serve.js';
import { generateSigningKey, parsePrivateKey } from '../../ota/trust/keys.js';
import { type SignedTargets, signTargets } from '../../ota/trust/targets.js';

export interface SimPackage {
  server: PackageServer;
  targets: SignedTargets;
  trustedKeys: OtaTrustedKey[];
  bytes: number;
  /** The first version's package. */
  package: { id: string; version: string };
  /** Every version's package, in the order asked for. */
  packages: { id: string; version: string }[];
}

export async function simPackage(dir: string, bytes: number, version = '2.0.0'): Promise<SimPackage> {
  return simPackages(dir, bytes, [version]);
}

export async function simPackages(dir: string, bytes: number, versions: string[]): Promise<SimPackage> {
  const served = join(dir, 'served');
  mkdirSync(served, { recursive: true });
  const packages = versions.map((version) => {
    const body = randomBytes(bytes);
    const name = `tiny-llm-${version}-cpu.tar`;
    writeFileSync(join(served, name), body);
    return {
      id: 'tiny-llm',
      version,
      artifacts: [
        { variant: 'cpu', name, length: bytes, sha256: createHash('sha256').update(body).digest('hex') },
      ],
    };
  });
  const key = generateSigningKey();
  const targets = signTargets(
    {
      _type: 'mnn-edge/targets',
      specVersion: 1,
      version: 1,
      expires: new Date(Date.now() + 86_400_000).toISOString(),
      packages,
    },
    [parsePrivateKey(key.privateKeyPem)],
  );
  const server = await servePackages(served);
  return {
    server,
    targets,
    trustedKeys: [{ publicKey: key.publicKey }],
    bytes,
    package: { id: 'tiny-llm', version: versions[0]! },
    packages: versions.map((version) => ({ id: 'tiny-llm', version })),
  };
}
