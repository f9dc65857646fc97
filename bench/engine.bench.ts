// bench/engine: decode speed and time to first token of the benchmark-size random-weight LLM (and its int4
// variant, where MNNConvert can make it) through (a) the addon in-process and (b) an engine host over IPC,
// against (c) MNN's own llm_bench on the same model, all in this run, interleaved round by round so that load
// on the machine colours all three alike.
//
// Same work on both sides: llm_bench runs `-pg 32,64` (prefill 32 tokens, then decode 64 continuing from that
// KV cache), as a generation does, and measures it right after a discarded run of the same work; so does this
// bench on each side. Its decode rate is tokens / MNN's decode time (the forward and detokenize of
// each step; sampling is outside it, a few µs at vocab 512, printed below); ours is what a consumer sees:
// (tokens - 1) / (last piece - first piece). Its time to first token is the prefill of `-pg 32,1`: the first
// token is sampled from the prefill's logits, and MNN's generation loop writes each token to its output stream
// before the forward step that computes the next one (transformers/llm/engine/src/speculative_decoding/
// generate.cpp), so that is when MNN itself has it. The addon takes tokens from that stream, so ours is the
// same work: from generate() to the first piece in the consumer, which also holds tokenizing the prompt, the
// sampling of that token and every hand-over.
//
// Same core: every round runs llm_bench's thread and our decode thread (GenerateOptions.decodeCpus) on one CPU,
// taking the CPUs in turn round by round (bench/lib/cpu-pin.ts says why: this machine's vCPUs can differ in
// speed by 1.6x, and unpinned, the single-threaded llm_bench and our decode thread land on different ones).
// While (a) or (b) runs, our other threads (the host's and this process's JS, the IPC between them) run on the
// other CPUs: nothing runs beside llm_bench on its CPU, and on a board with several cores the thread that hands
// tokens on runs beside the decode thread, not in its time (on 2 cores, unpinned, it preempts it).
//
// The model is generated outside the repository (tiny-mnn-llm, README "Benchmark-size model") into
// $MNN_EDGE_CACHE (default ~/.cache/mnn-edge). Needs MNN_SRC (default /opt/src/MNN) only the first time.
// Targets (issue 18): (b)/(c) >= 0.97 for decode tok/s; TTFT of (b) at most 5 ms above (c).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as EngineApi from '../engine/index.js';
import type { Llm } from '../engine/index.js';
import { createMemoryLogger } from '../lib/log.js';
import { BenchModelUnavailable, ensureBenchModel, ensureBenchModelInt4 } from './lib/bench-model.js';
import { allowedCpus, canPin, withSelfOn } from './lib/cpu-pin.js';
import { builtUrl, ensureBuilt } from './lib/dist.js';
import { ensureLoopWall, LoopWall, type LoopWallSample } from './lib/loop-wall.js';
import { llmBenchPg } from './lib/mnn-baseline.js';
import { bar, check, describe, fmt, type Summary, summarize } from './lib/stats.js';
import { type Hops, hopsOf, printHopCosts } from './lib/token-hops.js';

// The engine as it ships (dist/, no TypeScript loader): the engine host it starts then runs host-main.js as
// the agent's runtime does, not through tsx.
ensureBuilt();
const {
  EngineHostClient,
  engineAvailability,
  Llm: LlmClass,
  unavailableMessage,
  weightFiles,
} = (await import(builtUrl('engine/index.ts'))) as typeof EngineApi;

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
const PROMPT_TOKENS = 32;
const DECODE_TOKENS = 64;
const DECODE_TARGET = 0.97;
/** Generations of (b) and of (d) per round, alternating. */
const PAIRS = 4;
const TTFT_TARGET_MS = 5;
const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const cpus = canPin() ? allowedCpus() : [];
const wallTool = ensureLoopWall();

function skip(reason: string): never {
  console.log(`SKIP bench/engine: ${reason}`);
  process.exit(0);
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

/** MNN's llm_bench on the CPU, same work as a generation (bench/lib/mnn-baseline.ts, `-pg 32,64 -pg 32,1`). */
function llmBench(config: string, scratch: string, cpu: number | undefined): Sample {
  const bin = join(mnnRoot, 'bin', 'llm_bench');
  const r = llmBenchPg({
    bin,
    config,
    backend: 'cpu',
    promptTokens: PROMPT_TOKENS,
    decodeTokens: DECODE_TOKENS,
    scratch,
    cpu,
  });
  return { decodeTps: r.decodeTps, ttftMs: r.ttftMs };
}

/** The item at the median of `f` (the upper middle one of an even count). */
function middleBy<T>(items: readonly T[], f: (x: T) => number): T | undefined {
  return [...items].sort((x, y) => f(x) - f(y))[items.length >> 1];
}

const overrides = { thread_num: 1, precision: 'normal' as const, max_new_tokens: DECODE_TOKENS };
// A raw prompt (no chat template) of exactly PROMPT_TOKENS tokens, as llm_bench's pp32, chosen so that this
// random-weight model does not sample a stop token within DECODE_TOKENS (' the' x 32 stops at once).
const prompt = 'Hello'.repeat(PROMPT_TOKENS);
const opts = { maxNewTokens: DECODE_TOKENS, applyTemplate: false };

/** Drops the files' pages from the page cache (posix_fadvise DONTNEED through dd; needs no privilege). */
function dropFromPageCache(files: string[]): void {
  for (const f of files) {
    if (existsSync(f)) execFileSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
  }
}

async function ttftOf(llm: Llm): Promise<number> {
  const t0 = performance.now();
  for await (const _ of llm.generate(prompt, { ...opts, maxNewTokens: 1 })) return performance.now() - t0;
  return Number.NaN;
}

/**
 * Where a load's time goes, page cache cold (the model's files dropped from it) and warm: reading the files,
 * MNN's load, and the warm-up the runtime does after a load (`Hello`, 2 tokens), shown against the first
 * token of the next requests so that one can see the warm-up is enough (and not more than needed).
 */
async function loadSplit(label: string, config: string): Promise<void> {
  console.log(`
${label}: load split (in-process; a host adds its process start, see bench/swap):`);
  for (const cache of ['cold', 'warm'] as const) {
    const probe = JSON.parse(readFileSync(config, 'utf8')) as Record<string, unknown>;
    if (cache === 'cold') dropFromPageCache(weightFiles(config, probe));
    const t0 = performance.now();
    const llm = await LlmClass.load(config, { overrides });
    const loadMs = performance.now() - t0;
    // Cold: the runtime's warm-up, then the first tokens. Warm: no warm-up, to show what it buys.
    let warmUpMs = Number.NaN;
    if (cache === 'cold') {
      const w0 = performance.now();
      await llm.complete('Hello', { maxNewTokens: 2 });
      warmUpMs = performance.now() - w0;
    }
    const after = [await ttftOf(llm), await ttftOf(llm), await ttftOf(llm)];
    const t = llm.loadTiming;
    await llm.dispose();
    console.log(
      `  ${cache.padEnd(5)} load ${fmt(loadMs, 0)} ms = read ${fmt(t.readMs, 0)} ms (${fmt(t.readBytes / 1048576, 1)} MiB, ` +
        `${fmt(t.readBytes / 1048576 / (t.readMs / 1000), 0)} MiB/s) + MNN load ${fmt(t.mnnLoadMs, 0)} ms + ` +
        `${fmt(loadMs - t.readMs - t.mnnLoadMs, 0)} ms ours; ` +
        (cache === 'cold' ? `warm-up ${fmt(warmUpMs, 1)} ms, then` : 'no warm-up,') +
        ` first token of ${PROMPT_TOKENS}-token prompts ${after.map((x) => fmt(x, 1)).join(', ')} ms`,
    );
  }
}

/** What the rounds of one model measured: each side's samples, (d)'s, the (b)/(d) pairs, the costs by hop. */
interface Rounds {
  samples: Record<'a' | 'b' | 'c', Sample[]>;
  loop: LoopWallSample[];
  pairRatios: number[];
  hops: Record<'a' | 'b', Hops[]>;
  /** The CPU each round ran on (undefined: unpinned). */
  roundCpus: Array<number | undefined>;
}

const labels = { a: '(a) addon in-process', b: '(b) engine host (IPC)', c: '(c) MNN llm_bench' } as const;

// Our other threads (JS, IPC, the consumer) stay off the decode thread's CPU while it decodes, as nothing else
// runs beside llm_bench on its CPU; on a 2-core machine they otherwise preempt the decode thread.
const others = (cpu: number | undefined) => (cpu === undefined ? [] : cpus.filter((c) => c !== cpu));
const optsOn = (cpu: number | undefined) => ({
  ...opts,
  ...(cpu === undefined ? {} : { decodeCpus: [cpu] }),
});

/** The prompt must be exactly PROMPT_TOKENS tokens, as llm_bench's pp32. */
async function checkPromptLength(config: string): Promise<void> {
  const probe = await LlmClass.load(config, { overrides });
  const promptTokens = (await probe.encode(prompt)).length;
  await probe.dispose();
  if (promptTokens !== PROMPT_TOKENS)
    throw new Error(`prompt is ${promptTokens} tokens, wanted ${PROMPT_TOKENS}`);
}

/** (a): the addon in this process, loaded afresh, one discarded generation, then the measured one. */
function measureA(config: string, cpu: number | undefined, r: Rounds): Promise<void> {
  return withSelfOn(others(cpu), cpus, async () => {
    const on = optsOn(cpu);
    const llm = await LlmClass.load(config, { overrides });
    try {
      await llm.complete(prompt, on);
      const inProcess = llm.generate(prompt, on);
      r.samples.a.push(await timed(inProcess, async () => (await inProcess.result).stats.generatedTokens));
      r.hops.a.push(hopsOf(inProcess.delivery, (await inProcess.result).stats));
    } finally {
      await llm.dispose();
    }
  });
}

/** (b): an engine host; it inherits this process's affinity (the other CPUs) when it starts. */
function measureB(config: string, scratch: string, cpu: number | undefined, r: Rounds): Promise<void> {
  return withSelfOn(others(cpu), cpus, () => measureHost(config, scratch, cpu, r));
}

// (b) and (d) side by side: both loaded, then PAIRS generations each, alternating, a fraction of a second
// apart; the machine's speed drifts over seconds, so these pairs compare the two far more closely than rounds.
async function measureHost(
  config: string,
  scratch: string,
  cpu: number | undefined,
  r: Rounds,
): Promise<void> {
  const on = optsOn(cpu);
  const host = await EngineHostClient.start({ name: 'bench', logger: createMemoryLogger(), cwd: scratch });
  let tool: LoopWall | undefined;
  try {
    await host.load(config, overrides);
    await host.complete(prompt, on);
    if ('bin' in wallTool)
      tool = await LoopWall.start(wallTool.bin, config, PROMPT_TOKENS, DECODE_TOKENS, cpu);
    const ours: Array<{ sample: Sample; hops: Hops }> = [];
    const theirs: LoopWallSample[] = [];
    const runOurs = async () => {
      const overIpc = host.generate(prompt, on);
      const sample = await timed(overIpc, async () => (await overIpc.result).stats.generatedTokens);
      ours.push({
        sample,
        hops: hopsOf(overIpc.delivery, (await overIpc.result).stats, overIpc.delivery),
      });
    };
    for (let k = 0; k < (tool ? PAIRS : 1); k++) {
      if (k % 2 === 0) await runOurs();
      if (tool) theirs.push(await tool.run());
      if (k % 2 === 1) await runOurs();
      const [b, d] = [ours[ours.length - 1], theirs[theirs.length - 1]];
      if (b && d) r.pairRatios.push(b.sample.decodeTps / d.wallTps);
    }
    const mid = middleBy(ours, (x) => x.sample.decodeTps)!;
    r.samples.b.push(mid.sample);
    r.hops.b.push(mid.hops);
    const midD = middleBy(theirs, (x) => x.wallTps);
    if (midD) r.loop.push(midD);
  } finally {
    await tool?.close();
    await host.close();
  }
}

async function runRounds(label: string, config: string, scratch: string): Promise<Rounds> {
  const r: Rounds = {
    samples: { a: [], b: [], c: [] },
    loop: [],
    pairRatios: [],
    hops: { a: [], b: [] },
    roundCpus: [],
  };
  // Each side loads the model afresh every round, as llm_bench (a new process per round) does, and, as llm_bench
  // also does, each measurement follows a discarded run of the same work, back to back.
  for (let round = 0; round < ROUNDS; round++) {
    // This machine's speed also drifts by ±15 % between runs of llm_bench alone: (b) and (c) run next to each
    // other and swap order every round, and the ratio is the median of the rounds' own ratios.
    const cpu = cpus.length > 0 ? cpus[round % cpus.length] : undefined;
    r.roundCpus.push(cpu);
    await measureA(config, cpu, r);
    if (round % 2 === 0) {
      await measureB(config, scratch, cpu, r);
      r.samples.c.push(llmBench(config, scratch, cpu));
    } else {
      r.samples.c.push(llmBench(config, scratch, cpu));
      await measureB(config, scratch, cpu, r);
    }
    process.stdout.write(`${label}: round ${round + 1}/${ROUNDS} done (CPU ${cpu ?? 'any'})\n`);
  }
  return r;
}

/** Prints each side's decode rate and time to first token; returns the time-to-first-token summaries. */
function printRates(label: string, config: string, r: Rounds): Record<'a' | 'b' | 'c', Summary> {
  const { samples, loop, roundCpus } = r;
  const decode: Record<'a' | 'b' | 'c', Summary> = {
    a: summarize(samples.a.map((s) => s.decodeTps)),
    b: summarize(samples.b.map((s) => s.decodeTps)),
    c: summarize(samples.c.map((s) => s.decodeTps)),
  };
  const ttft: Record<'a' | 'b' | 'c', Summary> = {
    a: summarize(samples.a.map((s) => s.ttftMs)),
    b: summarize(samples.b.map((s) => s.ttftMs)),
    c: summarize(samples.c.map((s) => s.ttftMs)),
  };
  console.log(
    `\n${label}: ${config}, CPU, thread_num 1, prompt ${PROMPT_TOKENS} tokens, decode ${DECODE_TOKENS}, ${ROUNDS} rounds, ` +
      (cpus.length > 0
        ? `each round's decoding on one CPU (llm_bench and our decode thread), CPUs ${cpus.join(', ')} in turn`
        : 'unpinned (no taskset: the sides may run on CPUs of different speed)'),
  );
  if (cpus.length > 1) {
    console.log("\nllm_bench's decode by CPU (why each round is pinned: the CPUs of this machine differ):");
    for (const cpu of cpus) {
      const on = samples.c.filter((_, i) => roundCpus[i] === cpu).map((x) => x.decodeTps);
      if (on.length > 0) console.log(`  CPU ${cpu}: ${describe(summarize(on), 'tok/s', 1)}`);
    }
  }
  console.log('\ndecode tok/s (median, min..max):');
  for (const k of ['a', 'b', 'c'] as const)
    console.log(`  ${labels[k].padEnd(24)} ${describe(decode[k], 'tok/s', 1)}`);
  if (loop.length > 0)
    console.log(
      `  ${"(d) MNN's loop, wall".padEnd(24)} ${describe(
        summarize(loop.map((x) => x.wallTps)),
        'tok/s',
        1,
      )} (by MNN's decode timer, as llm_bench divides: ${fmt(summarize(loop.map((x) => x.timerTps)).median, 1)} tok/s)`,
    );
  console.log('\ntime to first token (for (c): prefill of the prompt, after which MNN has the first token):');
  for (const k of ['a', 'b', 'c'] as const)
    console.log(`  ${labels[k].padEnd(24)} ${describe(ttft[k], 'ms', 2)}`);
  return ttft;
}

/** Against (d), MNN's own loop by the wall clock: decode rate (pairs) and time to first token. */
function printAgainstLoop(label: string, r: Rounds, scale: number, ttftB: number): void {
  const { samples, loop, pairRatios } = r;
  if (loop.length === 0) return;
  // (d) runs the same generation loop as llm_bench, timed by the wall clock: what MNN's decode timer leaves
  // out (each step's sampling and bookkeeping) is the gap between its two rates, and no program that takes
  // MNN's tokens as they come can be faster than (d).
  const timerShare = summarize(loop.map((x) => x.wallTps / x.timerTps)).median;
  const rd = summarize(pairRatios).median;
  const rdc = summarize(loop.map((x, i) => x.wallTps / samples.c[i]!.decodeTps)).median;
  console.log(bar("(d)/(c) MNN's loop, wall", rdc, scale, `${fmt(rdc, 3)}x`));
  console.log(
    `\nllm_bench's rate divides by MNN's decode timer, which leaves out each step's sampling ` +
      `(${fmt(summarize(loop.map((x) => x.sampleUs)).median, 1)} µs) and bookkeeping: MNN's own loop by the wall ` +
      `clock runs at ${fmt(timerShare, 3)}x the rate its timer gives. Against that loop, same work on both sides ` +
      `(${pairRatios.length} generations of each, alternating, a pair at a time), the engine host is at (b)/(d) ` +
      `${fmt(rd, 3)}x (median pair; min ${fmt(Math.min(...pairRatios), 3)}, max ${fmt(Math.max(...pairRatios), 3)}) ` +
      check(`${label} decode host/MNN's loop (wall)`, rd, 'x', `≥ ${DECODE_TARGET}`, rd >= DECODE_TARGET) +
      '.',
  );
  const dd = ttftB - summarize(loop.map((x) => x.prefillMs)).median;
  console.log(
    `\nTTFT: llm_bench's prefill timer leaves out MNN's per-generation setup around it; (d)'s prefill call by ` +
      `the wall clock takes ${describe(summarize(loop.map((x) => x.prefillMs)), 'ms', 2)}. (b) is ` +
      `${fmt(dd, 2)} ms above it (ours also tokenizes the prompt and hands the token over) ` +
      check(`${label} TTFT host − MNN's loop (wall)`, dd, 'ms', `≤ +${TTFT_TARGET_MS}`, dd <= TTFT_TARGET_MS),
  );
}

/** The ratios against llm_bench, the comparison with (d), and the two targets' verdicts. */
function printVerdicts(label: string, r: Rounds, ttft: Record<'a' | 'b' | 'c', Summary>): void {
  const { samples } = r;
  const pairedRatio = (k: 'a' | 'b') =>
    summarize(samples[k].map((x, i) => x.decodeTps / samples.c[i]!.decodeTps)).median;
  const ra = pairedRatio('a');
  const rb = pairedRatio('b');
  const scale = Math.max(ra, rb, 1);
  console.log("\ndecode speed vs llm_bench, median of each round's ratio (1.00 = MNN itself):");
  console.log(bar('(a)/(c) in-process', ra, scale, `${fmt(ra, 3)}x`));
  console.log(bar('(b)/(c) engine host', rb, scale, `${fmt(rb, 3)}x`));
  console.log(bar('(c)/(c) llm_bench', 1, scale, '1.000x'));
  printAgainstLoop(label, r, scale, ttft.b.median);
  const da = ttft.a.median - ttft.c.median;
  const db = ttft.b.median - ttft.c.median;
  console.log(`\nTTFT above llm_bench: (a) ${fmt(da, 2)} ms, (b) ${fmt(db, 2)} ms`);
  const decodeVerdict = check(
    `${label} decode host/llm_bench`,
    rb,
    'x',
    `≥ ${DECODE_TARGET}`,
    rb >= DECODE_TARGET,
  );
  console.log(`\ntarget (b)/(c) decode >= ${DECODE_TARGET}: ${fmt(rb, 3)} ${decodeVerdict}`);
  const ttftVerdict = check(
    `${label} TTFT host − llm_bench`,
    db,
    'ms',
    `≤ +${TTFT_TARGET_MS}`,
    db <= TTFT_TARGET_MS,
  );
  console.log(`target TTFT (b) - (c) <= ${TTFT_TARGET_MS} ms: ${fmt(db, 2)} ms ${ttftVerdict}`);
}

async function benchModel(label: string, config: string, scratch: string): Promise<void> {
  await loadSplit(label, config);
  await checkPromptLength(config);
  const r = await runRounds(label, config, scratch);
  const ttft = printRates(label, config, r);
  printHopCosts(r.hops, labels);
  printVerdicts(label, r, ttft);
}

async function main(): Promise<void> {
  const availability = engineAvailability();
  if (!availability.available) skip(unavailableMessage(availability.reason));
  if (!existsSync(join(mnnRoot, 'bin', 'llm_bench'))) skip(`no llm_bench in ${mnnRoot}/bin (set MNN_ROOT)`);
  const models: Array<[string, () => string]> = [
    ['fp32', () => ensureBenchModel()],
    ['int4', () => ensureBenchModelInt4()],
  ];
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-'));
  if (cpus.length === 0) console.log('taskset not found: the rounds run unpinned');
  if ('unavailable' in wallTool)
    console.log(`no baseline (d) (MNN's loop by the wall clock): ${wallTool.unavailable}`);
  try {
    for (const [label, make] of models) {
      let config: string;
      try {
        config = make();
      } catch (err) {
        if (!(err instanceof BenchModelUnavailable)) throw err;
        console.log(`\nSKIP ${label}: ${err.message}`);
        continue;
      }
      await benchModel(label, config, scratch);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
