import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendType } from '../agent/plan/types.js';
import {
  type BackendName,
  EngineHostClient,
  engineAvailability,
  type RuntimeInfo,
  unavailableMessage,
} from '../engine/index.js';
import { createMemoryLogger } from '../lib/log.js';
import { BenchModelUnavailable, ensureBenchModel } from './lib/bench-model.js';
import { allowedCpus, canPin, withSelfOn } from './lib/cpu-pin.js';
import { BaselineOnWrongBackend, type MnnBaseline, type MnnSample, mnnBaseline } from './lib/mnn-baseline.js';
import { measureRuntimeFallback } from './lib/runtime-fallback.js';
import { check, describe, fmt, summarize } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const PROMPT_TOKENS = 32;
const DECODE_TOKENS = 32;
const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const mnnSrc = process.env['MNN_SRC'] ?? '/opt/src/MNN';
const cpus = canPin() ? allowedCpus() : [];

function skip(reason: string): never {
  console.log(`SKIP bench/backends: ${reason}`);
  process.exit(0);
}

function llmBenchBinary(): string | undefined {
  return [join(mnnRoot, 'bin', 'llm_bench'), join(mnnSrc, 'build', 'llm_bench')].find((p) => existsSync(p));
}

interface Sample {
  decodeTps: number;
  ttftMs: number;
  promptTokens: number;
}

async function timedHost(
  host: EngineHostClient,
  prompt: string,
  decodeCpus: number[] | undefined,
): Promise<Sample> {
  const start = performance.now();
  let first = 0;
  const g = host.generate(prompt, {
    maxNewTokens: DECODE_TOKENS,
    applyTemplate: false,
    ...(decodeCpus ? { decodeCpus } : {}),
  });
  for await (const _ of g) if (first === 0) first = performance.now();
  const end = performance.now();
  const stats = (await g.result).stats;
  return {
    ttftMs: first - start,
    decodeTps: ((stats.generatedTokens - 1) * 1000) / (end - first),
    promptTokens: stats.promptTokens,
  };
}

async function loadMs(config: string, overrides: Record<string, unknown>, cwd: string): Promise<number> {
  const host = await EngineHostClient.start({ name: 'load', logger: createMemoryLogger(), cwd });
  try {
    const t0 = performance.now();
    await host.load(config, overrides);
    return performance.now() - t0;
  } finally {
    await host.close(); // a clean exit: MNN writes the kernel cache now
  }
}

/** What a warm load can gain on this backend, said plainly next to the figure. */
function cacheNote(backend: string, cacheBytes: number): string {
  if (backend === 'vulkan' && cacheBytes < 1024)
    return (
      `MNN's Vulkan cache file holds only workgroup-size tuning results (VulkanRuntime::onGetCache), not ` +
      `compiled pipelines; nothing was tuned, so it is an empty ${cacheBytes}-byte table and a warm load has ` +
      'nothing to reuse: the 0.3x target cannot be met by any Vulkan driver with this MNN, lavapipe or not'
    );
  if (cacheBytes < 1024) return `the cache is only ${cacheBytes} bytes: little for a warm load to reuse`;
  return '';
}

/** One backend's figures: its loads, each round's samples on both sides, and the baseline it was measured against. */
interface BackendResult {
  cold: number;
  warm?: number;
  cacheBytes?: number;
  host: Sample[];
  mnn: MnnSample[];
  /** Each round's host/baseline decode ratio. */
  ratios: number[];
  baseline: MnnBaseline;
  baselineError?: string;
}

/** What every backend's measurement shares: the model, the MNN tools, the prompt and the scratch directory. */
interface BenchSetup {
  config: string;
  bin: string;
  demo: string | undefined;
  prompt: string;
  scratch: string;
}

/** The CPU and every GPU backend whose probe passed (the others said, with the step that failed). */
function usableBackends(probes: NonNullable<RuntimeInfo['probes']>): BackendName[] {
  const backends: BackendName[] = ['cpu'];
  for (const p of probes) {
    const failed = p.steps.find((s) => s.status === 'fail');
    if (failed) console.log(`${p.name}: not usable here (${failed.step}: ${failed.detail})`);
    else backends.push(p.name);
  }
  return backends;
}

/** One round on one backend: a fresh host and the baseline, side by side, in alternating order. */
async function measureRound(
  backend: BackendName,
  round: number,
  setup: BenchSetup,
  overrides: Record<string, unknown>,
  entry: BackendResult,
): Promise<void> {
  const { config, prompt, scratch } = setup;
  const cpu = backend === 'cpu' && cpus.length > 0 ? cpus[round % cpus.length] : undefined;
  // As in bench/engine: our other threads run on the other CPUs while the decode thread has llm_bench's
  // (the host inherits this process's affinity when it starts).
  const others = cpu === undefined ? [] : cpus.filter((c) => c !== cpu);
  const decodeCpus = cpu === undefined ? undefined : [cpu];
  const measureHost = () => withSelfOn(others, cpus, hostRun);
  const hostRun = async () => {
    const host = await EngineHostClient.start({
      name: backend,
      logger: createMemoryLogger(),
      cwd: scratch,
    });
    try {
      await host.load(config, overrides);
      await timedHost(host, prompt, decodeCpus); // warm-up, as llm_bench's
      return await timedHost(host, prompt, decodeCpus);
    } finally {
      await host.close();
    }
  };
  const measureMnn = () => {
    if (entry.baselineError !== undefined) return undefined;
    try {
      return entry.baseline.run(scratch, cpu);
    } catch (err) {
      if (!(err instanceof BaselineOnWrongBackend)) throw err;
      entry.baselineError = err.message;
      return undefined;
    }
  };
  // Side by side, in alternating order: the machine's speed drifts between runs.
  let ours: Sample;
  let theirs: MnnSample | undefined;
  if (round % 2 === 0) {
    ours = await measureHost();
    theirs = measureMnn();
  } else {
    theirs = measureMnn();
    ours = await measureHost();
  }
  entry.host.push(ours);
  if (theirs) {
    entry.mnn.push(theirs);
    entry.ratios.push(ours.decodeTps / theirs.decodeTps);
  }
  process.stdout.write(`${backend}: round ${round + 1}/${ROUNDS} done (CPU ${cpu ?? 'any'})\n`);
}

/** A backend's cold and warm load (a warm one only where it writes a kernel cache), then ROUNDS rounds. */
async function measureBackend(backend: BackendName, setup: BenchSetup): Promise<BackendResult> {
  const { config, scratch } = setup;
  const cacheDir = mkdtempSync(join(scratch, `${backend}-cache-`));
  const overrides = {
    backend_type: backend as BackendName,
    thread_num: 1,
    precision: 'normal' as const,
    max_new_tokens: DECODE_TOKENS,
    ...(backend === 'cpu' ? {} : { tmp_path: cacheDir }),
  };
  const cold = await loadMs(config, overrides, scratch);
  const cacheFile = join(cacheDir, 'mnn_cachefile.bin');
  const cacheBytes = existsSync(cacheFile) ? statSync(cacheFile).size : undefined;
  const warm = cacheBytes !== undefined ? await loadMs(config, overrides, scratch) : undefined;
  const baseline = mnnBaseline(backend, {
    config,
    llmBench: setup.bin,
    llmDemo: setup.demo,
    promptTokens: PROMPT_TOKENS,
    decodeTokens: DECODE_TOKENS,
  });
  const entry: BackendResult = {
    cold,
    ...(warm !== undefined ? { warm } : {}),
    ...(cacheBytes !== undefined ? { cacheBytes } : {}),
    host: [],
    mnn: [],
    ratios: [],
    baseline,
  };
  // A fresh host every round, as the baseline is a fresh process: on this VM a process's speed depends on
  // where it runs. The CPU backend's decoding runs on one CPU per round on both sides (bench/lib/cpu-pin.ts);
  // a GPU backend's driver threads (lavapipe's) are the driver's own, so those rounds are not pinned.
  for (let round = 0; round < ROUNDS; round++) await measureRound(backend, round, setup, overrides, entry);
  return entry;
}

function printBackend(backend: string, r: BackendResult): void {
  console.log(`\n${backend}:`);
  if (r.warm !== undefined && r.cacheBytes !== undefined) {
    const note = cacheNote(backend, r.cacheBytes);
    console.log(
      `  load cold ${fmt(r.cold, 0)} ms, warm ${fmt(r.warm, 0)} ms (cache ${r.cacheBytes} bytes): ` +
        `warm/cold ${fmt(r.warm / r.cold, 2)}x ${check(`${backend} load warm/cold`, r.warm / r.cold, 'x', '<= 0.3', r.warm / r.cold <= 0.3)} (target <= 0.3)` +
        (note ? `\n    note: ${note}` : ''),
    );
  } else console.log(`  load ${fmt(r.cold, 0)} ms (no kernel cache on this backend: cold = warm)`);
  const hostDecode = summarize(r.host.map((s) => s.decodeTps));
  const hostTtft = summarize(r.host.map((s) => s.ttftMs));
  console.log(
    `  engine host: decode ${describe(hostDecode, 'tok/s', 2)}; TTFT ${describe(hostTtft, 'ms', 1)} (${r.host[0]?.promptTokens} prompt tokens)`,
  );
  console.log(`  baseline: ${r.baseline.tool} — ${r.baseline.why}`);
  if (r.baselineError !== undefined || r.mnn.length === 0) {
    console.log(`  no comparison: ${r.baselineError ?? 'the baseline produced no sample'}`);
    return;
  }
  const mnnDecode = summarize(r.mnn.map((s) => s.decodeTps));
  const mnnTtft = summarize(r.mnn.map((s) => s.ttftMs));
  console.log(
    `  ${r.baseline.tool}: decode ${describe(mnnDecode, 'tok/s', 2)}; TTFT (prompt / prefill rate) ${describe(mnnTtft, 'ms', 1)} (${r.mnn[0]?.promptTokens} prompt tokens)`,
  );
  const ratio = summarize(r.ratios).median;
  console.log(
    `  host/${r.baseline.tool} decode (median of the rounds' ratios) ${fmt(ratio, 3)}x ${check(`${backend} decode host/${r.baseline.tool}`, ratio, 'x', '>= 0.95', ratio >= 0.95)} (target >= 0.95); ` +
      `TTFT host/${r.baseline.tool} ${fmt(hostTtft.median / mnnTtft.median, 2)}x`,
  );
}

/** The runtime's fallback from the first usable GPU backend to the CPU, against one load. */
async function printFallback(
  backends: BackendName[],
  setup: BenchSetup,
  engineVersion: string,
  cpuColdMs: number,
): Promise<void> {
  const gpu = backends.find((b) => b !== 'cpu');
  if (!gpu) {
    console.log('\nfallback: no GPU backend usable here, nothing to fall back from');
    return;
  }
  const f = await measureRuntimeFallback({
    config: setup.config,
    gpu: gpu as BackendType,
    engineVersion,
    prompt: setup.prompt,
  });
  // The load to compare with is the fallback's own (same moment, same page cache), not the cold one above.
  const oneLoad = f.fallbackLoadMs;
  const beyond = f.faultToTokenMs - oneLoad;
  console.log(
    `\nfallback ${gpu} → cpu through the runtime (host SIGKILLed at its first token; that answer ended as ${f.cutShortAs}):` +
      `\n  fault → next token ${fmt(f.faultToTokenMs, 0)} ms; the fallback's CPU model load ${fmt(oneLoad, 0)} ms ` +
      `(cold CPU load above: ${fmt(cpuColdMs, 0)} ms); beyond the load ${fmt(beyond, 0)} ms ` +
      `${check(`fallback ${gpu}→cpu beyond one load`, beyond, 'ms', '<= 2000', beyond <= 2000)} (target <= 2000 ms plus one load)` +
      `\n  ${f.fromKey} → ${f.toKey}` +
      `\n  timeline: ${f.timeline.join('; ')}`,
  );
}

async function main(): Promise<void> {
  const availability = engineAvailability();
  if (!availability.available) skip(unavailableMessage(availability.reason));
  const bin = llmBenchBinary();
  if (!bin) skip(`no llm_bench in ${mnnRoot}/bin or ${mnnSrc}/build`);
  const demo = [join(mnnRoot, 'bin', 'llm_demo'), join(mnnSrc, 'build', 'llm_demo')].find((p) =>
    existsSync(p),
  );
  let config: string;
  try {
    config = ensureBenchModel();
  } catch (err) {
    if (err instanceof BenchModelUnavailable) skip(err.message);
    throw err;
  }
  const backends = usableBackends(availability.info.probes ?? []);
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-backends-'));
  const setup: BenchSetup = { config, bin, demo, prompt: 'Hello'.repeat(PROMPT_TOKENS), scratch };
  const results: Record<string, BackendResult> = {};
  try {
    for (const backend of backends) results[backend] = await measureBackend(backend, setup);

    console.log(
      `\nmodel ${config} (benchmark size), thread_num 1, prompt ${PROMPT_TOKENS}x"Hello", decode ${DECODE_TOKENS}, ${ROUNDS} rounds, ` +
        `a fresh host and baseline process each round` +
        (cpus.length > 0 ? `; CPU rounds decode on CPU ${cpus.join(', ')} in turn on both sides` : ''),
    );
    for (const backend of backends) printBackend(backend, results[backend]!);
    await printFallback(backends, setup, availability.info.mnnVersion, results['cpu']!.cold);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
