// bench/engine: decode speed and time to first token of the benchmark-size random-weight LLM through
// (a) the addon in-process and (b) an engine host over IPC, against (c) MNN's own llm_bench on the same model,
// all in this run, interleaved round by round so that load on the machine colours all three alike.
//
// The model is generated outside the repository (tiny-mnn-llm, README "Benchmark-size model") into
// $MNN_EDGE_CACHE (default ~/.cache/mnn-edge). Needs MNN_SRC (default /opt/src/MNN) only the first time.
// Targets (issue 3): (b)/(c) >= 0.97 for decode tok/s; TTFT of (b) at most 10 ms above (c).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLogger } from '../agent/common/log.js';
import { EngineHostClient, engineAvailability, Llm, unavailableMessage } from '../engine/src/index.js';
import { BenchModelUnavailable, ensureBenchModel } from './lib-bench-model.js';
import { bar, describe, fmt, summarize, verdict } from './stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const PROMPT_TOKENS = 32;
const DECODE_TOKENS = 64;
const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';

function skip(reason: string): never {
  console.log(`SKIP bench/engine: ${reason}`);
  process.exit(0);
}

/** The generator and the model are built once (bench/lib-bench-model.ts); later runs reuse them. */
function benchModel(): string {
  try {
    return ensureBenchModel();
  } catch (err) {
    if (err instanceof BenchModelUnavailable) skip(err.message);
    throw err;
  }
}

interface Sample {
  decodeTps: number;
  ttftMs: number;
}

/** Times one generation from the consumer's side: TTFT to the first piece, decode rate after it. */
async function timed(pieces: AsyncIterable<string>, tokens: () => Promise<number>): Promise<Sample> {
  const start = performance.now();
  let first = 0;
  for await (const _ of pieces) {
    if (first === 0) first = performance.now();
  }
  const end = performance.now();
  const generated = await tokens();
  if (generated < DECODE_TOKENS) throw new Error(`the model stopped after ${generated} tokens`);
  return { ttftMs: first - start, decodeTps: ((generated - 1) * 1000) / (end - first) };
}

/** MNN's llm_bench, one repetition per call: pp32 gives the prefill rate, tg64 the decode rate. */
function llmBench(config: string, scratch: string): Sample {
  const bin = join(mnnRoot, 'bin', 'llm_bench');
  const json = join(scratch, 'llm_bench.json');
  const args = [
    '-m',
    config,
    '-a',
    'cpu',
    '-t',
    '1',
    '-c',
    '0',
    '-p',
    `${PROMPT_TOKENS}`,
    '-n',
    `${DECODE_TOKENS}`,
  ];
  execFileSync(bin, [...args, '-rep', '1', '-j', json], { cwd: scratch, stdio: 'ignore' });
  const out = JSON.parse(readFileSync(json, 'utf8')) as { results: Array<{ type: string; tps: number }> };
  const prefill = out.results.find((r) => r.type === 'prefill')!.tps;
  const decode = out.results.find((r) => r.type === 'decode')!.tps;
  return { decodeTps: decode, ttftMs: (PROMPT_TOKENS / prefill) * 1000 };
}

async function main(): Promise<void> {
  const availability = engineAvailability();
  if (!availability.available) skip(unavailableMessage(availability.reason));
  if (!existsSync(join(mnnRoot, 'bin', 'llm_bench'))) skip(`no llm_bench in ${mnnRoot}/bin (set MNN_ROOT)`);
  const config = benchModel();
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-'));
  const overrides = { thread_num: 1, precision: 'normal' as const, max_new_tokens: DECODE_TOKENS };
  // A raw prompt (no chat template) of exactly PROMPT_TOKENS tokens, as llm_bench's pp32, chosen so that this
  // random-weight model does not sample a stop token within DECODE_TOKENS (' the' x 32 stops at once).
  const prompt = 'Hello'.repeat(PROMPT_TOKENS);
  const opts = { maxNewTokens: DECODE_TOKENS, applyTemplate: false };

  const llm = await Llm.load(config, { overrides });
  const promptTokens = (await llm.encode(prompt)).length;
  if (promptTokens !== PROMPT_TOKENS)
    throw new Error(`prompt is ${promptTokens} tokens, wanted ${PROMPT_TOKENS}`);
  const host = await EngineHostClient.start({ name: 'bench', logger: createMemoryLogger(), cwd: scratch });
  await host.load(config, overrides);

  const samples: Record<'a' | 'b' | 'c', Sample[]> = { a: [], b: [], c: [] };
  try {
    // One warm-up each: first-call allocations are not what the appliance sees in steady state.
    await llm.complete(prompt, opts);
    await host.complete(prompt, opts);
    for (let round = 0; round < ROUNDS; round++) {
      const inProcess = llm.generate(prompt, opts);
      samples.a.push(await timed(inProcess, async () => (await inProcess.result).stats.generatedTokens));
      const overIpc = host.generate(prompt, opts);
      samples.b.push(await timed(overIpc, async () => (await overIpc.result).stats.generatedTokens));
      samples.c.push(llmBench(config, scratch));
      process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`);
    }
  } finally {
    await llm.dispose();
    await host.close();
    rmSync(scratch, { recursive: true, force: true });
  }

  const labels = { a: '(a) addon in-process', b: '(b) engine host (IPC)', c: '(c) MNN llm_bench' } as const;
  const decode = {
    a: summarize(samples.a.map((s) => s.decodeTps)),
    b: summarize(samples.b.map((s) => s.decodeTps)),
    c: summarize(samples.c.map((s) => s.decodeTps)),
  };
  const ttft = {
    a: summarize(samples.a.map((s) => s.ttftMs)),
    b: summarize(samples.b.map((s) => s.ttftMs)),
    c: summarize(samples.c.map((s) => s.ttftMs)),
  };
  console.log(
    `\nmodel ${config} (benchmark size), CPU, thread_num 1, prompt ${PROMPT_TOKENS} tokens, decode ${DECODE_TOKENS}, ${ROUNDS} rounds`,
  );
  console.log('\ndecode tok/s (median, min..max):');
  for (const k of ['a', 'b', 'c'] as const)
    console.log(`  ${labels[k].padEnd(24)} ${describe(decode[k], 'tok/s', 1)}`);
  console.log('\ntime to first token (for (c): prompt length / llm_bench prefill rate):');
  for (const k of ['a', 'b', 'c'] as const)
    console.log(`  ${labels[k].padEnd(24)} ${describe(ttft[k], 'ms', 2)}`);

  const ra = decode.a.median / decode.c.median;
  const rb = decode.b.median / decode.c.median;
  const scale = Math.max(ra, rb, 1);
  console.log('\ndecode speed vs llm_bench (1.00 = MNN itself):');
  console.log(bar('(a)/(c) in-process', ra, scale, `${fmt(ra, 3)}x`));
  console.log(bar('(b)/(c) engine host', rb, scale, `${fmt(rb, 3)}x`));
  console.log(bar('(c)/(c) llm_bench', 1, scale, '1.000x'));
  const da = ttft.a.median - ttft.c.median;
  const db = ttft.b.median - ttft.c.median;
  console.log(`\nTTFT above llm_bench: (a) ${fmt(da, 2)} ms, (b) ${fmt(db, 2)} ms`);
  console.log(`\ntarget (b)/(c) decode >= 0.97: ${fmt(rb, 3)} ${verdict(rb >= 0.97)}`);
  console.log(`target TTFT (b) - (c) <= 10 ms: ${fmt(db, 2)} ms ${verdict(db <= 10)}`);
}

await main();
