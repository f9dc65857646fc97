// MNN's own numbers for the same model on the same backend, the baseline an engine host is compared with.
//
// llm_bench (transformers/llm/engine/tools/llm_bench.cpp at MNN 4d40bdbd7) cannot run Vulkan: its `-a` parser
// knows only cpu, metal, cuda, opencl and hexagon and maps every other name to 0, the CPU, and buildLLM() then
// sets backend_type "cpu" over whatever the model's config.json says. `llm_bench -a vulkan` therefore measures
// the CPU without a word of warning — the "suspiciously fast Vulkan baseline" of an earlier run. For a backend
// llm_bench cannot select, the baseline is llm_demo (same MNN, same Llm API) with a copy of config.json that names
// the backend; llm_demo prints its prefill and decode speeds. Either tool's output is checked for MNN's own
// "Can't Find type=… backend, use 0 instead", so a baseline that silently ran on the CPU is refused, not printed.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { onCpu } from './cpu-pin.js';

export interface MnnSample {
  decodeTps: number;
  /** Prefill time of the prompt: what TTFT is made of before the first decode step. */
  ttftMs: number;
  promptTokens: number;
}

export interface MnnBaseline {
  tool: 'llm_bench' | 'llm_demo';
  /** Why this tool measures this backend. */
  why: string;
  /** One measurement; `cpu`: the one logical CPU to run it on (the CPU backend's decode thread), or anywhere. */
  run(scratch: string, cpu?: number): MnnSample;
}

/** The names llm_bench's `-a` understands; anything else silently becomes the CPU. */
const LLM_BENCH_BACKENDS = new Set(['cpu', 'metal', 'cuda', 'opencl', 'hexagon']);

export class BaselineOnWrongBackend extends Error {}

function refuseCpuFallback(tool: string, backend: string, output: string): void {
  const m = /Can't Find type=(\d+) backend, use (\d+) instead/.exec(output);
  if (m && backend !== 'cpu')
    throw new BaselineOnWrongBackend(
      `${tool} ran ${backend} on MNN forward type ${m[2]} instead (MNN: "${m[0]}"): no fair baseline`,
    );
}

function run(bin: string, args: string[], cwd: string, cpu?: number): string {
  const [cmd, argv] = onCpu(cpu, bin, args);
  // MNN prints to stdout and stderr; both are needed for the backend check.
  return execFileSync(cmd, argv, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 << 20,
  });
}

/**
 * One llm_bench run of `-pg P,N -pg P,1`, one repetition (after its own discarded one): the decode rate of P+N, the
 * first token from the prefill of P+1 (MNN has the first token once the prompt's prefill is sampled).
 */
export function llmBenchPg(o: {
  bin: string;
  config: string;
  backend: string;
  promptTokens: number;
  decodeTokens: number;
  scratch: string;
  cpu: number | undefined;
}): MnnSample {
  const json = join(o.scratch, 'llm_bench.json');
  const args = ['-m', o.config, '-a', o.backend, '-t', '1', '-c', '0'];
  const pg = ['-pg', `${o.promptTokens},${o.decodeTokens}`, '-pg', `${o.promptTokens},1`];
  const out = run(o.bin, [...args, ...pg, '-rep', '1', '-j', json], o.scratch, o.cpu);
  refuseCpuFallback('llm_bench', o.backend, out);
  const res = JSON.parse(readFileSync(json, 'utf8')) as {
    results: Array<{ type: string; generate_len?: number; prefill_tps?: number; decode_tps?: number }>;
  };
  const row = (n: number) => {
    const r = res.results.find((x) => x.type === 'prefill_and_decode' && x.generate_len === n);
    if (!r?.prefill_tps || !r.decode_tps)
      throw new Error(`llm_bench wrote no pp+tg${n} row: ${JSON.stringify(res)}`);
    return { prefillTps: r.prefill_tps, decodeTps: r.decode_tps };
  };
  return {
    decodeTps: row(o.decodeTokens).decodeTps,
    ttftMs: (o.promptTokens / row(1).prefillTps) * 1000,
    promptTokens: o.promptTokens,
  };
}

export function mnnBaseline(
  backend: string,
  options: {
    config: string;
    llmBench: string;
    llmDemo: string | undefined;
    promptTokens: number;
    decodeTokens: number;
  },
): MnnBaseline {
  const { config, promptTokens, decodeTokens } = options;
  if (LLM_BENCH_BACKENDS.has(backend))
    return {
      tool: 'llm_bench',
      why:
        `llm_bench -a ${backend} -pg ${promptTokens},${decodeTokens}: the decode continues from the prompt's KV ` +
        "cache, as a generation's does (a standalone -n decode starts from an empty one, less work per token)",
      run(scratch, cpu) {
        return llmBenchPg({
          bin: options.llmBench,
          config,
          backend,
          promptTokens,
          decodeTokens,
          scratch,
          cpu,
        });
      },
    };
  const demo = options.llmDemo;
  if (!demo)
    return {
      tool: 'llm_demo',
      why: `llm_bench cannot select ${backend} and there is no llm_demo`,
      run() {
        throw new BaselineOnWrongBackend(
          `no baseline for ${backend}: llm_bench maps it to the CPU, llm_demo is missing`,
        );
      },
    };
  return {
    tool: 'llm_demo',
    why:
      `llm_bench maps "-a ${backend}" to the CPU (only cpu/metal/cuda/opencl/hexagon are parsed), so llm_demo ` +
      `with backend_type "${backend}" in the config. Not quite like for like: after loading, llm_demo also runs ` +
      'Llm::tuning(OP_ENCODER_NUMBER), which picks how many ops go into one GPU command-buffer commit; the ' +
      'engine host does not tune (on lavapipe that tuning took 13 s)',
    run(scratch, cpu) {
      // Beside the original: MNN resolves the model's files relative to the config's directory.
      const own = JSON.parse(readFileSync(config, 'utf8')) as Record<string, unknown>;
      const variant = join(dirname(config), `bench-${backend}.json`);
      writeFileSync(
        variant,
        JSON.stringify({
          ...own,
          backend_type: backend,
          thread_num: 1,
          precision: 'normal',
          max_new_tokens: decodeTokens,
        }),
      );
      const prompt = join(scratch, 'prompt.txt');
      writeFileSync(prompt, `${'Hello'.repeat(promptTokens)}\n`);
      const out = run(demo, [variant, prompt, `${decodeTokens}`], scratch, cpu);
      refuseCpuFallback('llm_demo', backend, out);
      const num = (re: RegExp) => {
        const m = re.exec(out);
        if (!m) throw new Error(`llm_demo printed no ${re.source}:\n${out.slice(-2000)}`);
        return Number(m[1]);
      };
      const tokens = num(/prompt tokens num = (\d+)/);
      const prefillTps = num(/prefill speed = ([\d.]+) tok\/s/);
      return {
        decodeTps: num(/decode speed = ([\d.]+) tok\/s/),
        ttftMs: (tokens / prefillTps) * 1000,
        promptTokens: tokens,
      };
    },
  };
}
