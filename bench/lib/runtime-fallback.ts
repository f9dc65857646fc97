// The live fallback as the agent does it, for bench/backends: the real Runtime with engine hosts over MNN,
// voice.llm pinned to a GPU backend with the CPU next in its chain. The GPU host is SIGKILLed at its first token
// (a driver reset), and the time runs from that fault to the first token of the next request: noticing the dead
// host, starting a CPU host, loading and warming it up, leasing it.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type { BackendType, PlanBoard, PlanCatalog, SlotSpec } from '../../agent/plan/types.js';
import { engineHostFactory } from '../../agent/runtime/engine/engine-host-adapter.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';

export interface FallbackTiming {
  fromKey: string;
  toKey: string;
  /** Fault → first token of the next request. */
  faultToTokenMs: number;
  /** How the answer that was streaming when the host died ended. */
  cutShortAs: string;
  /** The fallback host's own model load, as the runtime timed it (same moment, same page cache). */
  fallbackLoadMs: number;
  /** Where the time went: each instance transition after the fault, ms after it. */
  timeline: string[];
}

export async function measureRuntimeFallback(options: {
  config: string;
  gpu: BackendType;
  engineVersion: string;
  prompt: string;
}): Promise<FallbackTiming> {
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-bench-fallback-'));
  const log = createMemoryLogger(5000);
  const board: PlanBoard = {
    boardId: 'bench-host',
    ramBytes: totalmem(),
    cpuClusters: [],
    backends: [
      { backend: 'cpu', available: true, reason: 'MNN CPU runtime' },
      { backend: options.gpu, available: true, reason: 'its evidence chain passed on this machine' },
    ],
    priors: [],
    threadAdvice: { threads: 1, cpus: [], reason: '1 thread, as the rest of bench/backends' },
  };
  const weightBytes = statSync(join(options.config, '..', 'llm.mnn.weight')).size;
  const catalog: PlanCatalog = {
    models: [
      {
        id: 'bench-llm',
        version: '1',
        kind: 'llm',
        variants: [
          {
            variantId: 'fp32',
            quant: 'fp32',
            weightBytes,
            kvBytesPerToken: 8 * 2 * 4 * 64 * 4,
            backends: ['cpu', options.gpu],
            configPath: options.config,
          },
        ],
      },
    ],
  };
  const slots: SlotSpec[] = [
    {
      slot: 'voice.llm',
      use: { model: { id: 'bench-llm', version: '1' } },
      priority: 80,
      contextTokens: 256,
      enabled: true,
    },
  ];
  const runtime = new Runtime({
    db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
    clock: systemClock,
    log,
    hosts: engineHostFactory({ engineVersion: options.engineVersion, log, cwd: scratch }),
    memory: procSystemMemory('/'),
    sources: { board: () => board, catalog: () => catalog },
    options: { acquireTimeoutMs: 600_000 },
  });
  try {
    await runtime.configure(slots);
    runtime.start();
    await runtime.pin('voice.llm', { backend: options.gpu }, 'bench');
    await runtime.settled();
    const fromKey = runtime.state().serving['voice.llm'];
    if (!fromKey?.includes(`|${options.gpu} `))
      throw new Error(
        `voice.llm is not on ${options.gpu}: ${fromKey}; ${JSON.stringify(runtime.state().failures)}`,
      );
    const victim = runtime.state().instances.find((i) => i.key === fromKey)!;
    const transitions: Array<{ atMs: number; what: string }> = [];
    runtime.events.on('transition', (e) => {
      transitions.push({
        atMs: e.atMs,
        what: `${e.instanceKey.split('|')[1]?.split(' ')[0]} ${e.from}→${e.to}`,
      });
    });
    let faultWallMs = 0;
    let fault = 0;
    let cutShortAs = 'no ending';
    for await (const ev of runtime.serving.stream('voice.llm', {
      prompt: options.prompt,
      maxNewTokens: 2000,
    })) {
      if (ev.type === 'text' && fault === 0) {
        fault = performance.now();
        faultWallMs = Date.now();
        process.kill(victim.pid, 'SIGKILL');
      } else if (ev.type === 'done') cutShortAs = ev.finishReason;
    }
    let next = 0;
    for await (const ev of runtime.serving.stream('voice.llm', { prompt: options.prompt, maxNewTokens: 2 }))
      if (ev.type === 'text' && next === 0) next = performance.now();
    const toKey = runtime.state().serving['voice.llm'] ?? 'nothing';
    return {
      fromKey,
      toKey,
      fallbackLoadMs: runtime.state().instances.find((i) => i.key === toKey)?.load?.ms ?? Number.NaN,
      faultToTokenMs: next - fault,
      cutShortAs,
      timeline: [
        ...transitions
          .filter((t) => t.atMs >= faultWallMs)
          .map((t) => `+${t.atMs - faultWallMs} ms ${t.what}`),
        `+${Math.round(next - fault)} ms first token of the next request`,
      ],
    };
  } finally {
    await runtime.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}
