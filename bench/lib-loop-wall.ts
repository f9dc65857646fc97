// Baseline (d) of bench/engine: MNN's generation loop timed by the wall clock, from bench/native/mnn-loop-wall.cpp,
// compiled against the installed MNN into $MNN_EDGE_CACHE once per version of its source.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchCacheDir } from './lib-bench-model.js';
import { onCpu } from './lib-cpu-pin.js';
import { repoRoot } from './lib-dist.js';

const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const source = join(repoRoot, 'bench', 'native', 'mnn-loop-wall.cpp');

export interface LoopWallSample {
  /** Tokens per second of the decode loop by the wall clock (what a program on MNN's API sees). */
  wallTps: number;
  /** The same run by MNN's decode timer (what llm_bench divides by). */
  timerTps: number;
  sampleUs: number;
}

/** The tool's path, building it first if needed, or why there is none. */
export function ensureLoopWall(): { bin: string } | { unavailable: string } {
  const digest = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 12);
  const bin = join(benchCacheDir, `mnn-loop-wall-${digest}`);
  if (existsSync(bin)) return { bin };
  if (spawnSync('g++', ['--version'], { stdio: 'ignore' }).status !== 0)
    return { unavailable: 'no g++ to build bench/native/mnn-loop-wall.cpp' };
  if (!existsSync(join(mnnRoot, 'include', 'llm', 'llm.hpp')))
    return { unavailable: `no MNN LLM headers in ${mnnRoot}/include (set MNN_ROOT)` };
  mkdirSync(benchCacheDir, { recursive: true });
  const r = spawnSync(
    'g++',
    [
      '-O2',
      '-std=c++17',
      source,
      `-I${mnnRoot}/include`,
      `-L${mnnRoot}/lib`,
      '-lMNN',
      `-Wl,-rpath,${mnnRoot}/lib`,
      '-o',
      bin,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0)
    return { unavailable: `building mnn-loop-wall failed: ${(r.stderr ?? '').slice(-500)}` };
  return { bin };
}

/** One measured run (after a discarded one) on `cpu`, or anywhere. */
export function loopWall(
  bin: string,
  config: string,
  promptTokens: number,
  decodeTokens: number,
  cpu: number | undefined,
): LoopWallSample {
  const [cmd, argv] = onCpu(cpu, bin, [config, String(promptTokens), String(decodeTokens), '1']);
  const out = execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const line = out.trim().split('\n').pop() ?? '';
  const parsed = JSON.parse(line) as { wallTps: number[]; timerTps: number[]; sampleUs: number[] };
  const [wallTps, timerTps, sampleUs] = [parsed.wallTps[0], parsed.timerTps[0], parsed.sampleUs[0]];
  if (wallTps === undefined || timerTps === undefined || sampleUs === undefined)
    throw new Error(`mnn-loop-wall printed no sample: ${line}`);
  return { wallTps, timerTps, sampleUs };
}
