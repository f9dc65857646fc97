// Which manifest a staged package installs under, checked against what was actually staged.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import type { StagedFile } from '../archive/stage-package.js';
import { deriveManifest } from '../manifest/derive.js';
import { parseManifestBytes } from '../manifest/parse-bytes.js';
import { MODEL_ID_PATTERN, packageFiles } from '../manifest/schema.js';
import { MANIFEST_FILE, type ModelManifest } from '../manifest/types.js';
import { readWakePackage } from '../wake-package.js';
import type { ImportOptions } from './store-types.js';

const MAX_MANIFEST_BYTES = INPUT_LIMITS.manifestMaxBytes;

function sanitizeId(name: string): string {
  const id = name
    .toLowerCase()
    .replace(/\.(tar\.gz|tgz|tar)$/, '')
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64);
  if (!new RegExp(MODEL_ID_PATTERN).test(id))
    throw new MnnEdgeError('EUSAGE', `Cannot make a model id from ${JSON.stringify(name)}; pass --id`);
  return id;
}

/**
 * The manifest of a staged package: its own (bounded in size) or, for a bare MNN export, one derived from the
 * files. Every staged file must be listed with its length and sha256, and every listed file staged.
 */
export function manifestFor(
  work: string,
  staged: StagedFile[],
  source: string,
  options: ImportOptions,
): ModelManifest {
  const byPath = new Map(staged.map((f) => [f.path, f]));
  let manifest: ModelManifest;
  const own = byPath.get(MANIFEST_FILE);
  if (own) {
    if (own.length > MAX_MANIFEST_BYTES)
      throw new MnnEdgeError(
        'EMANIFEST',
        `Invalid manifest ${MANIFEST_FILE}: ${own.length} bytes, over the limit of ${MAX_MANIFEST_BYTES}`,
      );
    manifest = parseManifestBytes(readFileSync(join(work, MANIFEST_FILE)), MANIFEST_FILE);
  } else {
    manifest = deriveManifest(work, staged, {
      id: options.id ?? sanitizeId(basename(source)),
      source,
      ...(options.version !== undefined ? { version: options.version } : {}),
      ...(options.task !== undefined ? { task: options.task } : {}),
    });
  }
  const listed = packageFiles(manifest);
  for (const [path, want] of listed) {
    const got = byPath.get(path);
    if (!got)
      throw new MnnEdgeError('EVERIFY', `File ${path} listed in the manifest is missing from the package`, {
        entry: path,
      });
    if (got.length !== want.length)
      throw new MnnEdgeError(
        'EVERIFY',
        `File ${path} is ${got.length} bytes but the manifest says ${want.length}`,
        { entry: path },
      );
    if (got.sha256 !== want.sha256)
      throw new MnnEdgeError(
        'EVERIFY',
        `File ${path} has sha256 ${got.sha256} but the manifest says ${want.sha256}`,
        {
          entry: path,
        },
      );
  }
  for (const f of staged)
    if (f.path !== MANIFEST_FILE && !listed.has(f.path))
      throw new MnnEdgeError('EVERIFY', `File ${f.path} is not listed in the manifest`, { entry: f.path });
  // A wake package's graphs must fit the pipeline: refused now, with the shapes, rather than at load.
  if (manifest.task === 'wake')
    readWakePackage(
      work,
      staged.map((f) => f.path),
    );
  return manifest;
}
