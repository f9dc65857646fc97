// The runtime with real engine hosts and MNN: hot swap under load, a host killed mid-generation, and a backend
// this host cannot run.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { CatalogModel, PlanBoard, SlotSpec } from '../../agent/plan/types.js';
import { engineHostFactory } from '../../agent/runtime/engine/engine-host-adapter.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { placementPortFrom } from '../../agent/runtime/placement-port.js';
import type { RuntimeEvents } from '../../agent/runtime/reconciling/events.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { Llm, runtimeInfo } from '../../engine/index.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { until } from '../helpers/until.js';
import { engineOrSkip, expectedOutput, media, models } from './_engine.js';

const MiB = 1024 * 1024;

const board: PlanBoard = {
  boardId: 'engine-test-host',
  ramBytes: totalmem(),
  cpuClusters: [],
  backends: [
    { backend: 'cpu', available: true, reason: 'MNN CPU runtime' },
    { backend: 'opencl', available: false, reason: 'not compiled into this MNN' },
  ],
  priors: [],
  threadAdvice: { threads: 1, cpus: [], reason: '1 thread: the test machine is shared' },
};

function tinyModel(version: string, configPath: string, quant: string): CatalogModel {
  return {
    id: 'tiny-llm',
    version,
    kind: 'llm',
    variants: [
      {
        variantId: quant,
        quant,
        weightBytes: 1 * MiB,
        kvBytesPerToken: 256,
        backends: ['cpu', 'opencl'],
        configPath,
      },
    ],
  };
}

const catalog = {
  models: [
    tinyModel('1', models.tinyLlm, 'fp32'),
    tinyModel('2', models.tinyLlmInt4, 'int4'),
    { ...tinyModel('1', models.tinyVlm, 'fp32'), id: 'tiny-vlm', kind: 'vlm' as const },
  ],
};

const slots: SlotSpec[] = [
  {
    slot: 'voice.llm',
    use: { model: { id: 'tiny-llm', version: '1' } },
    priority: 80,
    contextTokens: 256,
    enabled: true,
  },
];

/** Every payload of one event, in order. */
function listen<K extends keyof RuntimeEvents & string>(runtime: Runtime, name: K): RuntimeEvents[K][] {
  const seen: RuntimeEvents[K][] = [];
  runtime.events.on(name, (p) => {
    seen.push(p);
  });
  return seen;
}

function setup() {
  const scratch = mkdtempSync(join(tmpdir(), 'mnn-edge-runtime-'));
  const log = createMemoryLogger(5000);
  const runtime = new Runtime({
    db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
    clock: systemClock,
    log,
    hosts: engineHostFactory({ engineVersion: runtimeInfo().mnnVersion, log, cwd: scratch }),
    memory: procSystemMemory('/'),
    sources: { board: () => board, catalog: () => catalog },
    options: { memoryReserveBytes: 64 * MiB, drainTimeoutMs: 5_000, acquireTimeoutMs: 60_000 },
  });
  const events = {
    switch: listen(runtime, 'switch'),
    fallback: listen(runtime, 'fallback'),
    'memory-released': listen(runtime, 'memory-released'),
  };
  return {
    runtime,
    events,
    log,
    async close() {
      await runtime.stop();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

const fp32 = 'tiny-llm@1/fp32|cpu t1 p:low m:low cpus:any';
const int4 = 'tiny-llm@2/int4|cpu t1 p:low m:low cpus:any';

if (engineOrSkip(test, 'runtime')) {
  test.serial(
    'hot swap tiny-llm → tiny-llm-int4 under concurrent requests: 0 failed, old host gone',
    async (t) => {
      const { runtime, events, close } = setup();
      try {
        await runtime.configure(slots);
        await runtime.settled();
        const first = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
        t.is(first.text, expectedOutput('tiny-llm', null, 'low').text);
        const oldPid = runtime.state().instances[0]!.pid;

        let running = true;
        const failures: string[] = [];
        const served = new Map<string, number>();
        const workers = Array.from({ length: 3 }, async () => {
          while (running) {
            try {
              const r = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 8 });
              served.set(r.instanceKey, (served.get(r.instanceKey) ?? 0) + 1);
            } catch (err) {
              failures.push((err as Error).message);
            }
          }
        });
        // States, not guessed times: requests are being served before the swap and by the new version after it.
        await until(() => (served.get(fp32) ?? 0) > 0, 'a request served by the fp32 instance');
        await runtime.setModelVersion('tiny-llm', '2', 'engine-test');
        await runtime.settled();
        await until(() => (served.get(int4) ?? 0) > 0, 'a request served by the int4 instance');
        running = false;
        await Promise.all(workers);

        t.deepEqual(failures, []);
        t.true((served.get(fp32) ?? 0) > 0, JSON.stringify([...served]));
        t.true((served.get(int4) ?? 0) > 0, JSON.stringify([...served]));
        t.is(events.switch!.find((s) => s.to === int4)!.strategy, 'blue-green');
        const released = events['memory-released']!.find((m) => m.instanceKey === fp32)!;
        t.is(released.pid, oldPid);
        t.true(released.processGone);
        t.true(released.peakRssBytes > 0);
        const after = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
        // The same build's answer in this process, at the placement's precision: exactly what the int4 host gave.
        // The host had answered the workers' 8-token 'Hello' requests, so its answer reused the prompt's KV and
        // prefilled only its last two tokens; the reference takes the same path. On MNN's Arm82 fp16 backend
        // (arm64 at 'low') the engine prefills in chunks and keeps KV to a chunk boundary, which for this short
        // prompt is none: both prefill it whole (docs/ENGINE.md, prefix reuse on the Arm82 backend).
        await using reference = await Llm.load(models.tinyLlmInt4, { overrides: { precision: 'low' } });
        await reference.complete('Hello', { maxNewTokens: 8 });
        t.is(after.text, (await reference.complete('Hello', { maxNewTokens: 32 })).text);
        t.deepEqual(
          runtime.state().instances.map((i) => i.key),
          [int4],
        );
      } finally {
        await close();
      }
    },
  );

  test.serial(
    'SIGKILL of a host mid-generation: the answer ends as backend-lost with the reason, the slot serves again',
    async (t) => {
      const { runtime, close } = setup();
      try {
        await runtime.configure(slots);
        await runtime.settled();
        const pid = runtime.state().instances[0]!.pid;
        await runtime.serving.generate('voice.llm', { prompt: 'Hi', maxNewTokens: 4 });
        const pieces: string[] = [];
        let finish: string | undefined;
        let detail: string | undefined;
        for await (const ev of runtime.serving.stream('voice.llm', { prompt: 'Hello', maxNewTokens: 2000 })) {
          if (ev.type === 'text') {
            pieces.push(ev.text);
            if (pieces.length === 3) process.kill(pid, 'SIGKILL');
          } else {
            finish = ev.finishReason;
            detail = ev.detail;
          }
        }
        // Tokens were streamed: they stand, the answer ends with its own reason (no exception mid-session).
        t.is(finish, 'backend-lost');
        t.regex(detail ?? '', new RegExp(`pid ${pid}.*(signal SIGKILL)`));
        const again = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
        t.is(again.text, expectedOutput('tiny-llm').text);
        t.not(runtime.state().instances[0]!.pid, pid);
        // The KV died with the host; the slot stats say the answer came from a new host, which kept nothing of it.
        const kv = runtime.slotStats().find((s) => s.slot === 'voice.llm')?.kv;
        t.true(kv?.last?.newHost);
        t.not(kv?.last?.outcome, 'hit');
        // /api/placement shows the same slot stats.
        t.deepEqual(
          placementPortFrom(runtime)
            .view()
            .slotStats?.find((s) => s.slot === 'voice.llm')?.kv,
          kv,
        );
        t.regex(runtime.state().failures[0]!.reason, /exited unexpectedly \(signal SIGKILL\)/);
      } finally {
        await close();
      }
    },
  );

  test.serial(
    'two conversations interleaved on one slot each keep their own context; /api/placement shows the hit',
    async (t) => {
      const { runtime, close } = setup();
      try {
        await runtime.configure(slots);
        await runtime.settled();
        // The planner gave the text LLM instance conversation snapshots (the default policy: 3 conversations).
        t.like(runtime.state().instances[0], { key: fp32 });
        const system = { role: 'system' as const, content: 'You are a helpful assistant.' };
        const a = [system, { role: 'user' as const, content: 'Hello, who are you?' }];
        const b = [system, { role: 'user' as const, content: 'What is the capital of France?' }];
        const a1 = await runtime.serving.generate('voice.llm', { prompt: a, maxNewTokens: 6 });
        await runtime.serving.generate('voice.llm', { prompt: b, maxNewTokens: 6 });
        await runtime.serving.generate('voice.llm', {
          prompt: [...a, { role: 'assistant', content: a1.text }, { role: 'user', content: 'And then?' }],
          maxNewTokens: 6,
        });
        const kv = runtime.slotStats().find((s) => s.slot === 'voice.llm')?.kv;
        t.like(kv?.last, { outcome: 'hit', route: 'own', reason: null });
        t.true((kv?.last?.contexts ?? 0) >= 2, `contexts ${kv?.last?.contexts}`);
        t.true((kv?.last?.snapshotBytes ?? 0) > 0);
        t.deepEqual(
          placementPortFrom(runtime)
            .view()
            .slotStats?.find((s) => s.slot === 'voice.llm')?.kv?.last,
          kv?.last,
        );
      } finally {
        await close();
      }
    },
  );

  test.serial('opencl on a host without it: falls back to cpu, reason recorded and announced', async (t) => {
    const { runtime, events, close } = setup();
    try {
      await runtime.configure(slots);
      await runtime.pin('voice.llm', { backend: 'opencl' }, 'engine-test');
      await runtime.settled();
      t.is(runtime.state().serving['voice.llm'], fp32);
      const fb = events.fallback!.at(-1)!;
      t.is(fb.fromKey, 'tiny-llm@1/fp32|opencl t68 p:low m:low cpus:any');
      t.is(fb.toKey, fp32);
      t.regex(
        fb.reason,
        /^load failed: MNN backend "opencl" requested for the LLM of .*tiny-llm\/config\.json/,
      );
      t.is(runtime.state().failures[0]!.reason, fb.reason);
      const r = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 32 });
      t.is(r.text, expectedOutput('tiny-llm').text);
    } finally {
      await close();
    }
  });

  test.serial(
    'a VLM slot gets its image through the runtime, and shares nothing with the LLM slot',
    async (t) => {
      const { runtime, close } = setup();
      try {
        await runtime.configure([
          ...slots,
          {
            slot: 'vision.vlm',
            use: { model: { id: 'tiny-vlm' } },
            priority: 50,
            contextTokens: 256,
            enabled: true,
          },
        ]);
        await runtime.settled();
        const r = await runtime.serving.generate('vision.vlm', {
          prompt: 'Hello',
          images: [media.red],
          maxNewTokens: 32,
        });
        t.is(r.text, expectedOutput('tiny-vlm', 'media/test_red_64x64.png').text);
        t.is(r.stats?.promptTokens, 27);
        t.is(runtime.state().instances.length, 2);
      } finally {
        await close();
      }
    },
  );
}
