// `ota pack`: a model directory → one package tarball with the manifest (mnn-edge.json) first. The manifest
// is the publisher's own when the directory has one, otherwise derived by models/ from MNN's export files.
// Entries carry mtime 0 and fixed modes, so packing the same files twice gives the same bytes and hash.

import { createHash } from 'node:crypto';
import { closeSync, createReadStream, fsyncSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { renameDurable } from '../../lib/durable-fs.js';
import { MnnEdgeError } from '../../lib/errors.js';
import {
  deriveManifest,
  hashFile,
  listPackageDir,
  MANIFEST_FILE,
  type ModelManifest,
  type TarWriteEntry,
  writeTar,
} from '../../models/index.js';
import { parseManifestBytes } from '../../models/manifest/parse-bytes.js';
import type { Artifact } from '../trust/targets.js';

export interface PackOptions {
  id?: string;
  version?: string;
  variant?: string;
  outDir: string;
}

export interface PackResult {
  tarball: string;
  artifact: Artifact;
  manifest: ModelManifest;
}

export async function packModel(modelDir: string, options: PackOptions): Promise<PackResult> {
  const paths = listPackageDir(modelDir).filter((p) => p !== MANIFEST_FILE);
  const files = [];
  for (const path of paths) files.push({ path, ...(await hashFile(join(modelDir, path))) });
  const manifest = readOrDerive(modelDir, files, options);
  const variant = options.variant ?? manifest.variants[0]!.name;
  const name = `${manifest.id}-${manifest.version}-${variant}.tar`;
  const tarball = join(options.outDir, name);
  const manifestBytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  const entries: TarWriteEntry[] = [
    { path: MANIFEST_FILE, data: manifestBytes },
    ...files.map((f) => ({
      path: f.path,
      size: f.length,
      data: createReadStream(join(modelDir, f.path), { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>,
    })),
  ];
  const part = `${tarball}.part`;
  const fd = openSync(part, 'w', 0o644);
  const hash = createHash('sha256');
  let length = 0;
  try {
    for await (const chunk of writeTar(entries)) {
      hash.update(chunk);
      let off = 0;
      while (off < chunk.length) off += writeSync(fd, chunk, off);
      length += chunk.length;
    }
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(part, { force: true });
    throw err;
  }
  closeSync(fd);
  renameDurable(part, tarball);
  return { tarball, manifest, artifact: { variant, name, length, sha256: hash.digest('hex') } };
}

function readOrDerive(
  dir: string,
  files: { path: string; length: number; sha256: string }[],
  options: PackOptions,
): ModelManifest {
  let own: Buffer | undefined;
  try {
    own = readFileSync(join(dir, MANIFEST_FILE));
  } catch {
    own = undefined;
  }
  if (own === undefined) {
    if (options.id === undefined || options.version === undefined) {
      throw new MnnEdgeError(
        'EUSAGE',
        `${dir} has no ${MANIFEST_FILE}: pass --id and --version to derive one`,
      );
    }
    return deriveManifest(dir, files, { id: options.id, version: options.version });
  }
  const manifest = parseManifestBytes(own, join(dir, MANIFEST_FILE));
  for (const [flag, want, got] of [
    ['--id', options.id, manifest.id],
    ['--version', options.version, manifest.version],
  ] as const) {
    if (want !== undefined && want !== got) {
      throw new MnnEdgeError('EUSAGE', `${flag} ${want} contradicts ${MANIFEST_FILE}, which says ${got}`);
    }
  }
  return manifest;
}
