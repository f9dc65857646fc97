// The benchmark-size random-weight LLM (shared/tools/tiny-mnn-llm, README "Benchmark-size model"), generated
// outside the repository into $MNN_EDGE_CACHE (default ~/.cache/mnn-edge) on first use. The same directory
// and sizes as bench/engine, so both benchmarks share one copy; other seeds give same-size models with other
// weights (a swap needs two). Needs MNN_SRC (default /opt/src/MNN) only to build the generator once.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { sharedDir } from '../../test/helpers/paths.js';

const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const mnnSrc = process.env['MNN_SRC'] ?? '/opt/src/MNN';
export const benchCacheDir = process.env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge');
const generatorDir = join(sharedDir, 'tools', 'tiny-mnn-llm');
const DEFAULT_SEED = 20260101;

/** A generated model's shape (gen_tiny_llm's flags). */
export interface BenchShape {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  inter: number;
}

/**
 * `bench`: the benchmark model every bench shares (hidden 512, 8 layers, 95 MB). `qwen-1.5b-layers`: two layers
 * of Qwen2.5-1.5B's shape (hidden 1536, 12 heads over 2 KV heads of 128, MLP 8960; 378 MB), for figures where
 * the balance between a layer's matrix work and its attention over the context matters: in the narrow bench
 * model attending over 1,000 tokens costs a third of a token's matrix work, in a board's real model a fifteenth.
 */
export const BENCH_SHAPES = {
  bench: { hidden: 512, layers: 8, heads: 8, kvHeads: 4, headDim: 64, inter: 1408 },
  'qwen-1.5b-layers': { hidden: 1536, layers: 2, heads: 12, kvHeads: 2, headDim: 128, inter: 8960 },
} as const satisfies Record<string, BenchShape>;
export type BenchShapeName = keyof typeof BENCH_SHAPES;

/**
 * Multiply-accumulates of prefilling `tokens` tokens after `held` tokens already in the KV cache: each token's
 * projections and MLP, plus its attention (q·k and the weighted sum of v) over every earlier position. Softmax,
 * norms and the LM head are left out (they do not grow with the context, and the LM head is tiny here).
 */
export function prefillMacs(shape: BenchShape, held: number, tokens: number): number {
  const q = shape.heads * shape.headDim;
  const kv = shape.kvHeads * shape.headDim;
  const matrix = shape.hidden * (2 * q + 2 * kv) + 3 * shape.hidden * shape.inter;
  // Positions attended by the prefilled tokens: held+1, held+2, …, held+tokens.
  const positions = tokens * held + (tokens * (tokens + 1)) / 2;
  return shape.layers * (tokens * matrix + 2 * q * positions);
}

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
export function ensureBenchModel(seed = DEFAULT_SEED, shapeName: BenchShapeName = 'bench'): string {
  const shape: BenchShape = BENCH_SHAPES[shapeName];
  const size = ['--hidden', String(shape.hidden), '--layers', String(shape.layers)];
  const graph = [
    ...size,
    ...['--heads', String(shape.heads), '--kv-heads', String(shape.kvHeads)],
    ...['--head-dim', String(shape.headDim), '--inter', String(shape.inter)],
  ];
  const base = shapeName === 'bench' ? 'bench-llm' : `bench-llm-${shapeName}`;
  const modelDir = join(benchCacheDir, seed === DEFAULT_SEED ? base : `${base}-seed${seed}`);
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
  console.log(`generating the benchmark model (${shapeName}, seed ${seed}) into ${modelDir}`);
  execFileSync('python3', [join(generatorDir, 'gen_tiny_assets.py'), modelDir, ...size], { stdio: 'ignore' });
  execFileSync(generator, [modelDir, ...graph, '--seed', String(seed)], { stdio: 'ignore' });
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
