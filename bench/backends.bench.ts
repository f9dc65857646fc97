// bench/backends: the benchmark-size LLM on every backend this MNN can run here (cpu, and vulkan where a Vulkan
// device answers — lavapipe on a CI machine), all in one run:
//   - load time cold (no GPU kernel cache) and warm (the cache the cold load left), target warm <= 0.3x cold;
//   - decode tok/s and TTFT through an engine host vs MNN's llm_bench on the same backend, target >= 0.95x;
//   - the live fallback: fault (the GPU host is killed mid-answer, as a driver reset would) → the next token on
//     the CPU fallback, printed beside one CPU model load; target <= 2 s plus that load.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLogger } from '../agent/common/log.js';
import {
  type BackendName,
  EngineHostClient,
  engineAvailability,
  unavailableMessage,
} from '../engine/src/index.js';
import { BenchModelUnavailable, ensureBenchModel } from './lib-bench-model.js';
import { describe, fmt, summarize, verdict } from './stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const PROMPT_TOKENS = 32;
const DECODE_TOKENS = 32;
const mnnRoot = process.env['MNN_ROOT'] ?? '/opt/mnn';
const mnnSrc = process.env['MNN_SRC'] ?? '/opt/src/MNN';

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
}

function llmBench(bin: string, config: string, backend: string, scratch: string): Sample {
  const json = join(scratch, 'llm_bench.json');
  const args = [
    '-m',
    config,
    '-a',
    backend,
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

async function timedHost(host: EngineHostClient, prompt: string): Promise<Sample> {
  const start = performance.now();
  let first = 0;
  const g = host.generate(prompt, { maxNewTokens: DECODE_TOKENS, applyTemplate: false });
  for await (const _ of g) if (first === 0) first = performance.now();
  const end = performance.now();
  const n = (await g.result).stats.generatedTokens;
  return { ttftMs: first - start, decodeTps: ((n - 1) * 1000) / (end - first) };
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

async function main(): Promise<void> {
  const availability = engineAvailability();
  if (!availability.available) skip(unavailableMessage(availability.reason));
  const bin = llmBenchBinary();
  if (!bin) skip(`no llm_bench in ${mnnRoot}/bin or ${mnnSrc}/build`);
  let config: string;
  try {
    config = ensureBenchModel();
  } catch (err) {
    if (err instanceof BenchModelUnavailable) skip(err.message);
    throw err;
  }
  const backends: BackendName[] = ['cpu'];
  for (const p of availability.info.probes ?? []) {
    const failed = p.steps.find((s) => s.status === 'fail');
    if (failed) console.log(`${p.name}: not usable here (${failed.step}: ${failed.detail})`);
    else backends.push(p.name);
  }
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-backends-'));
  const prompt = 'Hello'.repeat(PROMPT_TOKENS);
  const results: Record<
    string,
    { cold: number; warm?: number; cacheBytes?: number; host: Sample[]; mnn: Sample[] }
  > = {};
  try {
    for (const backend of backends) {
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
      const host = await EngineHostClient.start({
        name: backend,
        logger: createMemoryLogger(),
        cwd: scratch,
      });
      const entry = {
        cold,
        ...(warm !== undefined ? { warm } : {}),
        ...(cacheBytes !== undefined ? { cacheBytes } : {}),
        host: [] as Sample[],
        mnn: [] as Sample[],
      };
      results[backend] = entry;
      try {
        await host.load(config, overrides);
        await timedHost(host, prompt); // warm-up
        for (let round = 0; round < ROUNDS; round++) {
          entry.host.push(await timedHost(host, prompt));
          entry.mnn.push(llmBench(bin, config, backend, scratch));
          process.stdout.write(`${backend}: round ${round + 1}/${ROUNDS} done\n`);
        }
      } finally {
        await host.close();
      }
    }

    console.log(
      `\nmodel ${config} (benchmark size), thread_num 1, prompt ${PROMPT_TOKENS}, decode ${DECODE_TOKENS}, ${ROUNDS} rounds`,
    );
    for (const backend of backends) {
      const r = results[backend]!;
      const hostDecode = summarize(r.host.map((s) => s.decodeTps));
      const mnnDecode = summarize(r.mnn.map((s) => s.decodeTps));
      const hostTtft = summarize(r.host.map((s) => s.ttftMs));
      const mnnTtft = summarize(r.mnn.map((s) => s.ttftMs));
      const ratio = hostDecode.median / mnnDecode.median;
      console.log(`\n${backend}:`);
      console.log(
        `  load cold ${fmt(r.cold, 0)} ms` +
          (r.warm !== undefined
            ? `, warm ${fmt(r.warm, 0)} ms (cache ${r.cacheBytes} bytes): warm/cold ${fmt(r.warm / r.cold, 2)}x ${verdict(r.warm / r.cold <= 0.3)} (target <= 0.3)`
            : ' (no kernel cache on this backend)'),
      );
      console.log(`  decode engine host ${describe(hostDecode, 'tok/s', 1)}`);
      console.log(`  decode llm_bench   ${describe(mnnDecode, 'tok/s', 1)}`);
      console.log(
        `  TTFT engine host ${describe(hostTtft, 'ms', 1)}; llm_bench (prompt / prefill rate) ${describe(mnnTtft, 'ms', 1)}`,
      );
      console.log(`  host/llm_bench decode ${fmt(ratio, 3)}x ${verdict(ratio >= 0.95)} (target >= 0.95)`);
    }

    const gpu = backends.find((b) => b !== 'cpu');
    if (!gpu) {
      console.log('\nfallback: no GPU backend usable here, nothing to fall back from');
      return;
    }
    // The fallback of a live fault: the GPU host dies mid-answer; a CPU host is started, loads, answers.
    const cpuOverrides = {
      backend_type: 'cpu' as BackendName,
      thread_num: 1,
      precision: 'normal' as const,
      max_new_tokens: DECODE_TOKENS,
    };
    const gpuHost = await EngineHostClient.start({
      name: 'victim',
      logger: createMemoryLogger(),
      cwd: scratch,
    });
    await gpuHost.load(config, { ...cpuOverrides, backend_type: gpu });
    const g = gpuHost.generate(prompt, { maxNewTokens: DECODE_TOKENS, applyTemplate: false });
    let fault = 0;
    const consumed = (async () => {
      try {
        for await (const _ of g)
          if (fault === 0) {
            fault = performance.now();
            gpuHost.kill('SIGKILL');
          }
      } catch {
        // the host is gone: expected
      }
    })();
    await consumed;
    const cpuHost = await EngineHostClient.start({
      name: 'fallback',
      logger: createMemoryLogger(),
      cwd: scratch,
    });
    const loadStart = performance.now();
    await cpuHost.load(config, cpuOverrides);
    const oneLoad = performance.now() - loadStart;
    let next = 0;
    for await (const _ of cpuHost.generate(prompt, { maxNewTokens: 2, applyTemplate: false }))
      if (next === 0) next = performance.now();
    await cpuHost.close();
    await gpuHost.close().catch(() => undefined);
    const total = next - fault;
    console.log(
      `\nfallback ${gpu} → cpu: fault → next token ${fmt(total, 0)} ms; one CPU model load ${fmt(oneLoad, 0)} ms; ` +
        `beyond the load ${fmt(total - oneLoad, 0)} ms ${verdict(total - oneLoad <= 2000)} (target <= 2000 ms plus one load)`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
