// bench/swap: blue/green hot swap and crash recovery of the runtime with real engine hosts.
//
// (a) baseline: what a swap cannot avoid — start an engine host, load the model, one warm-up generation —
//     measured under the same request load as the swap, in the same run, interleaved round by round;
// (b) swap: from the swap command (an OTA version change) to the new model serving (the atomic switch);
// (c) crash recovery: from SIGKILL of the serving host to the slot serving again.
// Benchmark-size model (bench/lib/bench-model.ts), thread_num 1, two request workers throughout.
// Targets (issues 5, 18): (b) − (a) ≤ 100 ms with 0 failed requests during the swaps; (c) ≤ one load, i.e.
// (a), + 100 ms: recovery is a fresh host and a load, and nothing else should add to it.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import type { PlanBoard, PlanCatalog, SlotSpec } from '../agent/plan/types.js';
import { engineHostFactory } from '../agent/runtime/engine/engine-host-adapter.js';
import type { EngineHostFactory } from '../agent/runtime/engine/engine-port.js';
import { procSystemMemory } from '../agent/runtime/engine/proc-memory.js';
import { runtimeMigrations } from '../agent/runtime/migrations.js';
import { Runtime } from '../agent/runtime/runtime.js';
import { coreMigration } from '../agent/store/core-migration.js';
import { openStore } from '../agent/store/database.js';
import { engineAvailability, runtimeInfo, unavailableMessage } from '../engine/index.js';
import { systemClock } from '../lib/clock.js';
import { createMemoryLogger } from '../lib/log.js';
import { BenchModelUnavailable, ensureBenchModel } from './lib/bench-model.js';
import { bar, check, describe, fmt, summarize } from './lib/stats.js';

const ROUNDS = Math.max(5, Number(process.env['BENCH_ROUNDS'] ?? 5));
const WORKERS = 2;
const TOKENS_PER_REQUEST = 16;

function skip(reason: string): never {
  console.log(`SKIP bench/swap: ${reason}`);
  process.exit(0);
}

const keyOf = (v: string) => `bench-llm@${v}/fp32|cpu t1 p:low m:low cpus:any`;

/** The two versions of the model (different seeds), or skip; and the size of their weights. */
function benchModels(): { configs: [string, string]; weightBytes: number } {
  let configs: [string, string];
  try {
    configs = [ensureBenchModel(), ensureBenchModel(7)];
  } catch (err) {
    if (err instanceof BenchModelUnavailable) skip(err.message);
    throw err;
  }
  return { configs, weightBytes: statSync(join(dirname(configs[0]), 'llm.mnn')).size };
}

/** One model in two versions, a CPU-only board, one LLM slot on version a. */
function benchPlan(
  configs: [string, string],
  weightBytes: number,
): { catalog: PlanCatalog; board: PlanBoard; slots: SlotSpec[] } {
  const catalog: PlanCatalog = {
    models: (['a', 'b'] as const).map((version, i) => ({
      id: 'bench-llm',
      version,
      kind: 'llm' as const,
      variants: [
        {
          variantId: 'fp32',
          quant: 'fp32',
          weightBytes,
          kvBytesPerToken: 16 * 1024,
          backends: ['cpu' as const],
          configPath: configs[i]!,
        },
      ],
    })),
  };
  const board: PlanBoard = {
    boardId: 'bench-host',
    ramBytes: totalmem(),
    cpuClusters: [],
    backends: [{ backend: 'cpu', available: true, reason: 'MNN CPU runtime' }],
    priors: [],
    threadAdvice: { threads: 1, cpus: [], reason: 'bench: thread_num 1' },
  };
  const slots: SlotSpec[] = [
    {
      slot: 'voice.llm',
      use: { model: { id: 'bench-llm', version: 'a' } },
      priority: 80,
      contextTokens: 512,
      enabled: true,
    },
  ];
  return { catalog, board, slots };
}

/** Whether each stopped host's memory was seen released (the runtime's memory-released events). */
function watchReleases(runtime: Runtime): { ok: number; total: number; unverified: string[] } {
  const seen = { ok: 0, total: 0, unverified: [] as string[] };
  runtime.events.on('memory-released', (m) => {
    seen.total++;
    if (m.ok) seen.ok++;
    else
      seen.unverified.push(
        `pid ${m.pid}: gone ${m.processGone}, MemAvailable +${fmt((m.memAvailableAfterBytes - m.memAvailableBeforeBytes) / 1048576, 1)} MiB ` +
          `(our other hosts grew ${fmt(m.otherHostsGrowthBytes / 1048576, 1)} MiB) ` +
          `for ${fmt(m.anonAtStopBytes / 1048576, 1)} MiB private (peak RSS ${fmt(m.peakRssBytes / 1048576, 1)} MiB)`,
      );
  });
  return seen;
}

/** When the slot next switches to `key` at or after `after`. */
function waitSwitch(runtime: Runtime, key: string, after: number): Promise<number> {
  return new Promise<number>((resolve) => {
    const off = runtime.events.on('switch', (s) => {
      if (s.to === key && performance.now() >= after) {
        off();
        resolve(performance.now());
      }
    });
  });
}

/** WORKERS request loops on the slot until stopped; failures are counted by the phase they fell in. */
function startWorkers(runtime: Runtime) {
  const load = {
    phase: 'swap' as 'swap' | 'crash',
    failed: { swap: [] as string[], crash: [] as string[] },
    served: 0,
    running: true,
  };
  const workers = Array.from({ length: WORKERS }, async () => {
    while (load.running) {
      try {
        await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: TOKENS_PER_REQUEST });
        load.served++;
      } catch (err) {
        load.failed[load.phase].push((err as Error).message);
      }
    }
  });
  const stop = async () => {
    load.running = false;
    await Promise.all(workers);
  };
  return { load, stop };
}

/** ROUNDS swaps between the two versions, each beside a baseline (a host started, loaded, warmed up). */
async function measureSwaps(runtime: Runtime, hosts: EngineHostFactory, configs: [string, string]) {
  // Where a swap's time goes: the host start, load and warm-up steps (the same work as the baseline) versus
  // the runtime's own part (command → planned steps, ready → switch), from the transition events.
  const readyAt = new Map<string, number>();
  runtime.events.on('transition', (tr) => {
    if (tr.to === 'ready') readyAt.set(tr.instanceKey, performance.now());
  });
  let planAt = 0;
  runtime.events.on('plan', () => {
    planAt = performance.now();
  });

  const baseline: number[] = [];
  const swap: number[] = [];
  const machinery: number[] = [];
  let current = 'a';
  const measureBaseline = async (version: string) => {
    const spec = runtime.desired.placement()!.instances[0]!.chosen;
    const t0 = performance.now();
    const host = await hosts.start({ label: 'baseline', cpus: [] });
    await host.load({ ...spec, key: keyOf(version), version, configPath: configs[version === 'a' ? 0 : 1] });
    for await (const _ of host.generate({ prompt: 'Hello', maxNewTokens: 2 })) {
      // warm-up, as the runtime does it
    }
    baseline.push(performance.now() - t0);
    await host.stop();
  };
  for (let round = 0; round < ROUNDS; round++) {
    const next = current === 'a' ? 'b' : 'a';
    // Alternate which goes first, so neither always finds the model's pages already cached.
    if (round % 2 === 0) await measureBaseline(next);
    readyAt.delete(keyOf(next));
    const s0 = performance.now();
    const switched = waitSwitch(runtime, keyOf(next), s0);
    await runtime.setModelVersion('bench-llm', next, `bench-${round}`);
    const s1 = await switched;
    swap.push(s1 - s0);
    const ready = readyAt.get(keyOf(next));
    if (ready !== undefined && planAt >= s0) machinery.push(planAt - s0 + (s1 - ready));
    await runtime.settled();
    if (round % 2 === 1) await measureBaseline(current);
    current = next;
  }
  return { baseline, swap, machinery, current };
}

/** ROUNDS kills of the serving host, each timed until the slot serves `current` again. */
async function measureRecovery(runtime: Runtime, current: string): Promise<number[]> {
  const recovery: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const pid = runtime.state().instances[0]!.pid;
    const k0 = performance.now();
    const back = waitSwitch(runtime, keyOf(current), k0);
    process.kill(pid, 'SIGKILL');
    recovery.push((await back) - k0);
    await runtime.settled();
  }
  return recovery;
}

interface SwapFigures {
  weightBytes: number;
  baseline: number[];
  swap: number[];
  machinery: number[];
  recovery: number[];
  served: number;
  failed: { swap: string[]; crash: string[] };
  released: { ok: number; total: number; unverified: string[] };
  switches: number;
}

function report(f: SwapFigures): void {
  const { failed } = f;
  const b = summarize(f.baseline);
  const s = summarize(f.swap);
  const r = summarize(f.recovery);
  const overhead = s.median - b.median;
  const own = summarize(f.machinery);
  console.log(
    `model: benchmark-size LLM (${fmt(f.weightBytes / 1048576, 1)} MiB llm.mnn), thread_num 1, ${WORKERS} request workers × ${TOKENS_PER_REQUEST} tokens`,
  );
  console.log(`(a) start host + load + warm-up: ${describe(b, 'ms', 1)}`);
  console.log(`(b) swap command → new model serving: ${describe(s, 'ms', 1)}`);
  console.log(`(c) SIGKILL → slot serving again: ${describe(r, 'ms', 1)}`);
  const max = Math.max(b.max, s.max, r.max);
  console.log(bar('(a) baseline median', b.median, max, `${fmt(b.median, 1)} ms  1.00x`));
  console.log(bar('(b) swap median', s.median, max, `${fmt(s.median, 1)} ms  ${fmt(s.median / b.median)}x`));
  console.log(
    bar('(c) crash recovery median', r.median, max, `${fmt(r.median, 1)} ms  ${fmt(r.median / b.median)}x`),
  );
  console.log(
    `    of which the runtime's own part (command → steps planned, ready → switch): ${describe(own, 'ms', 1)}`,
  );
  console.log(
    `requests served: ${f.served}; old hosts verified released: ${f.released.ok}/${f.released.total}`,
  );
  for (const u of f.released.unverified) console.log(`  not verified: ${u}`);
  console.log(
    `swap overhead (b) − (a): ${fmt(overhead, 1)} ms (target ≤ +100 ms)  ${check('swap overhead', overhead, 'ms', '≤ +100', overhead <= 100)}`,
  );
  console.log(
    `failed requests during swaps: ${failed.swap.length} (target 0)  ${check('failed requests during swaps', failed.swap.length, '', '0', failed.swap.length === 0)}`,
  );
  if (failed.swap.length > 0) console.log(`  first: ${failed.swap[0]}`);
  console.log(
    `crash recovery median: ${fmt(r.median, 1)} ms (target ≤ one load (a) + 100 ms = ${fmt(b.median + 100, 1)} ms)  ${check('crash recovery − one load', r.median - b.median, 'ms', '≤ +100', r.median <= b.median + 100)}; requests cut by the kills: ${failed.crash.length}`,
  );
  console.log(`switch events seen: ${f.switches}`);
}

async function main(): Promise<void> {
  const availability = engineAvailability();
  if (!availability.available) skip(unavailableMessage(availability.reason));
  const { configs, weightBytes } = benchModels();
  const { catalog, board, slots } = benchPlan(configs, weightBytes);
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-swap-'));
  const log = createMemoryLogger(2000);
  const hosts = engineHostFactory({ engineVersion: runtimeInfo().mnnVersion, log, cwd: scratch });
  const runtime = new Runtime({
    db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
    clock: systemClock,
    log,
    hosts,
    memory: procSystemMemory('/'),
    sources: { board: () => board, catalog: () => catalog },
    options: { memoryReserveBytes: 128 * 1024 * 1024, drainTimeoutMs: 10_000 },
  });
  const switchedAt = new Map<string, number[]>();
  runtime.events.on('switch', (s) => {
    if (s.to) switchedAt.set(s.to, [...(switchedAt.get(s.to) ?? []), performance.now()]);
  });
  const released = watchReleases(runtime);

  await runtime.configure(slots);
  await runtime.settled();

  const workers = startWorkers(runtime);
  const { baseline, swap, machinery, current } = await measureSwaps(runtime, hosts, configs);
  workers.load.phase = 'crash';
  const recovery = await measureRecovery(runtime, current);
  await workers.stop();
  await runtime.stop();
  rmSync(scratch, { recursive: true, force: true });

  report({
    weightBytes,
    baseline,
    swap,
    machinery,
    recovery,
    served: workers.load.served,
    failed: workers.load.failed,
    released,
    switches: [...switchedAt.values()].reduce((n, v) => n + v.length, 0),
  });
}

await main();
