// Baseline (d) of bench/engine: MNN's generation loop timed by the wall clock, from bench/native/mnn-loop-wall.cpp,
// compiled against the installed MNN into $MNN_EDGE_CACHE once per version of its source. The tool keeps its model
// loaded and runs one generation per request, so a benchmark can interleave it run by run with its own.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchCacheDir, mnnToolBuildArgs } from './bench-model.js';
import { onCpu } from './cpu-pin.js';
import { repoRoot } from './dist.js';

const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const source = join(repoRoot, 'bench', 'native', 'mnn-loop-wall.cpp');

export interface LoopWallSample {
  /** Wall clock of MNN's prefill call (its per-generation setup included): when MNN has the first token. */
  prefillMs: number;
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
  const r = spawnSync('g++', mnnToolBuildArgs(source, bin), { encoding: 'utf8' });
  if (r.status !== 0)
    return { unavailable: `building mnn-loop-wall failed: ${(r.stderr ?? '').slice(-500)}` };
  return { bin };
}

/** A running tool with the model loaded (and one generation discarded), on `cpu` or anywhere. */
export class LoopWall {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: string[] = [];
  #waiter: (() => void) | undefined;
  #exit: string | undefined;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child;
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let nl = buffered.indexOf('\n');
      while (nl !== -1) {
        // MNN prints its own lines (CPU features) to stdout too: only ours count.
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line === 'ready' || line.startsWith('{')) this.#lines.push(line);
        nl = buffered.indexOf('\n');
      }
      this.#wake();
    });
    child.stderr.resume();
    child.on('exit', (code, signal) => {
      this.#exit = `mnn-loop-wall exited (${signal ?? code})`;
      this.#wake();
    });
  }

  static async start(
    bin: string,
    config: string,
    promptTokens: number,
    decodeTokens: number,
    cpu: number | undefined,
  ): Promise<LoopWall> {
    const [cmd, argv] = onCpu(cpu, bin, [config, String(promptTokens), String(decodeTokens)]);
    const tool = new LoopWall(spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] }));
    const first = await tool.#next();
    if (first !== 'ready') throw new Error(`mnn-loop-wall did not start: ${first}`);
    return tool;
  }

  /** One measured generation. */
  async run(): Promise<LoopWallSample> {
    this.#child.stdin.write('run\n');
    const line = await this.#next();
    const s = JSON.parse(line) as Partial<LoopWallSample>;
    if (
      typeof s.prefillMs !== 'number' ||
      typeof s.wallTps !== 'number' ||
      typeof s.timerTps !== 'number' ||
      typeof s.sampleUs !== 'number'
    )
      throw new Error(`mnn-loop-wall printed no sample: ${line}`);
    return { prefillMs: s.prefillMs, wallTps: s.wallTps, timerTps: s.timerTps, sampleUs: s.sampleUs };
  }

  async close(): Promise<void> {
    if (this.#exit !== undefined) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.stdin.end();
    await exited;
  }

  async #next(): Promise<string> {
    for (;;) {
      const line = this.#lines.shift();
      if (line !== undefined) return line;
      if (this.#exit !== undefined) throw new Error(this.#exit);
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
      });
    }
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }
}
