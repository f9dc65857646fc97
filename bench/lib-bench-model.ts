// The benchmark-size random-weight LLM (shared/tools/tiny-mnn-llm, README "Benchmark-size model"), generated
// outside the repository into $MNN_EDGE_CACHE (default ~/.cache/mnn-edge) on first use. The same directory
// and sizes as bench/engine, so both benchmarks share one copy; other seeds give same-size models with other
// weights (a swap needs two). Needs MNN_SRC (default /opt/src/MNN) only to build the generator once.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { sharedDir } from '../test/helpers/paths.js';

const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const mnnSrc = process.env['MNN_SRC'] ?? '/opt/src/MNN';
export const benchCacheDir = process.env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge');
const generatorDir = join(sharedDir, 'tools', 'tiny-mnn-llm');
const SIZE = ['--hidden', '512', '--layers', '8'];
const GRAPH = [...SIZE, '--heads', '8', '--kv-heads', '4', '--head-dim', '64', '--inter', '1408'];
const DEFAULT_SEED = 20260101;

export class BenchModelUnavailable extends Error {}

/** g++'s arguments for a benchmark tool of ours linked against the installed MNN (found at run time by rpath). */
export function mnnToolBuildArgs(source: string, out: string, includeDirs: readonly string[] = []): string[] {
  return [
    '-O2',
    '-std=c++17',
    source,
    `-I${mnnRoot}/include`,
    ...includeDirs.map((d) => `-I${d}`),
    `-L${mnnRoot}/lib`,
    '-lMNN',
    `-Wl,-rpath,${mnnRoot}/lib`,
    '-o',
    out,
  ];
}

/** config.json of the benchmark model with this seed (the default seed is bench/engine's `bench-llm`). */
export function ensureBenchModel(seed = DEFAULT_SEED): string {
  const modelDir = join(benchCacheDir, seed === DEFAULT_SEED ? 'bench-llm' : `bench-llm-seed${seed}`);
  const config = join(modelDir, 'config.json');
  if (existsSync(join(modelDir, 'llm.mnn')) && existsSync(config)) return config;
  const generator = join(benchCacheDir, 'gen_tiny_llm');
  if (!existsSync(generator)) {
    if (!existsSync(join(mnnSrc, 'schema', 'current', 'MNN_generated.h')))
      throw new BenchModelUnavailable(
        `the benchmark model is not in ${modelDir} and MNN_SRC (${mnnSrc}) has no schema/current to build the generator`,
      );
    mkdirSync(benchCacheDir, { recursive: true });
    console.log(`building the tiny-mnn-llm generator into ${generator}`);
    execFileSync(
      'g++',
      mnnToolBuildArgs(join(generatorDir, 'gen_tiny_llm.cpp'), generator, [
        `${mnnSrc}/schema/current`,
        `${mnnSrc}/3rd_party/flatbuffers/include`,
      ]),
    );
  }
  console.log(`generating the benchmark model (seed ${seed}) into ${modelDir}`);
  execFileSync('python3', [join(generatorDir, 'gen_tiny_assets.py'), modelDir, ...SIZE], { stdio: 'ignore' });
  execFileSync(generator, [modelDir, ...GRAPH, '--seed', String(seed)], { stdio: 'ignore' });
  return config;
}

/**
 * The int4 variant of the benchmark model (4-bit weights in blocks of 32, as the generator's README converts
 * tiny-llm-int4), made with MNNConvert from the fp32 model; MNN installs without the converter cannot make it.
 */
export function ensureBenchModelInt4(): string {
  const fp32 = ensureBenchModel();
  const fp32Dir = join(fp32, '..');
  const modelDir = join(benchCacheDir, 'bench-llm-int4');
  const config = join(modelDir, 'config.json');
  if (existsSync(join(modelDir, 'llm.mnn.weight')) && existsSync(config)) return config;
  const convert = join(mnnRoot, 'bin', 'MNNConvert');
  if (!existsSync(convert))
    throw new BenchModelUnavailable(
      `the int4 benchmark model is not in ${modelDir} and ${convert} is missing (MNN built with MNN_BUILD_CONVERTER=OFF)`,
    );
  mkdirSync(modelDir, { recursive: true });
  for (const f of ['config.json', 'llm_config.json', 'tokenizer.txt', 'embeddings_bf16.bin'])
    copyFileSync(join(fp32Dir, f), join(modelDir, f));
  console.log(`converting the benchmark model to int4 into ${modelDir}`);
  // A converter that cannot run (a library it needs is not on its path: exit 127) makes no model, which is a
  // skipped part with the reason, not a failed benchmark; the half-made directory goes so that the next run retries.
  const r = spawnSync(
    convert,
    [
      '-f',
      'MNN',
      '--modelFile',
      join(fp32Dir, 'llm.mnn'),
      '--MNNModel',
      join(modelDir, 'llm.mnn'),
      '--saveExternalData',
      '--weightQuantBits',
      '4',
      '--weightQuantBlock',
      '32',
      '--transformerFuse',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  if (r.status !== 0 || !existsSync(join(modelDir, 'llm.mnn.weight'))) {
    rmSync(modelDir, { recursive: true, force: true });
    const why =
      r.error?.message ?? `exit ${r.status}: ${r.stderr?.toString().trim().split('\n').at(-1) ?? ''}`;
    throw new BenchModelUnavailable(`${convert} could not make the int4 benchmark model (${why})`);
  }
  return config;
}
