// Live fallback off a GPU backend: the host dies (a driver reset), new hosts cannot use the backend, requests
// are rescued, and the runtime returns only after probes pass in a row (fake engine hosts; the real run is in
// test/engine/fallback.test.ts).

import test from 'ava';
import { defaultPlanPolicy, type PlanBoard, type SlotSpec } from '../../agent/plan/types.js';
import type { GenerateEvent } from '../../agent/runtime/engine/engine-port.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import type { RuntimeEvents } from '../../agent/runtime/reconciling/events.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import type { BackendHealthEvent } from '../../agent/runtime/serving/backend-health.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { sleep, systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { until } from '../helpers/until.js';
import { FakeWorld, stopAfterTests } from './runtime-fakes.js';
import { MiB, testBoard, tinyLlm } from './runtime-parts.js';

const board: PlanBoard = {
  ...testBoard,
  boardId: 'gpu-board',
  backends: [
    { backend: 'cpu', available: true, reason: 'always' },
    { backend: 'opencl', available: true, reason: 'Mali GPU, libOpenCL.so' },
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
const onGpu = 'tiny-llm@1/fp32|opencl t68 p:low m:low cpus:any';
const onCpu = 'tiny-llm@1/fp32|cpu t2 p:low m:low cpus:any';

function setup() {
  const world = new FakeWorld();
  const probe = { ok: false, calls: 0 };
  const runtime = stopAfterTests(
    new Runtime({
      db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
      clock: systemClock,
      log: createMemoryLogger(),
      hosts: world,
      memory: world,
      sources: {
        board: () => board,
        catalog: () => ({ models: [tinyLlm('1')] }),
      },
      policy: defaultPlanPolicy,
      options: {
        drainTimeoutMs: 500,
        drainGraceMs: 100,
        acquireTimeoutMs: 5_000,
        memoryReserveBytes: 256 * MiB,
        release: { timeoutMs: 200, pollMs: 5, tolerance: 0.1 },
        runnerBackoff: { baseMs: 20, maxMs: 200 },
        // The plain backoff alone would retry the GPU after 30 ms; the health gate must hold it anyway.
        failureBackoff: { baseMs: 30, maxMs: 60, forgetAfterMs: 60_000 },
      },
      backendHealth: {
        probeIntervalMs: 40,
        successesNeeded: 2,
        minDownMs: 150,
        probe: async () => {
          probe.calls++;
          return probe.ok
            ? { ok: true, detail: 'ran a 1x4x8x8 add' }
            : { ok: false, detail: 'icd: nothing registered' };
        },
      },
    }),
  );
  const health: BackendHealthEvent[] = [];
  runtime.events.on('backend-health', (e) => {
    health.push(e);
  });
  const rescued: RuntimeEvents['request-rescued'][] = [];
  runtime.events.on('request-rescued', (e) => {
    rescued.push(e);
  });
  return { world, runtime, probe, health, rescued };
}

async function collect(events: AsyncIterable<GenerateEvent>, onText?: (n: number) => void) {
  let text = '';
  let done: Extract<GenerateEvent, { type: 'done' }> | undefined;
  let n = 0;
  for await (const ev of events) {
    if (ev.type === 'text') {
      text += ev.text;
      onText?.(++n);
    } else done = ev;
  }
  return { text, done };
}

test('a request with no token yet is retried on the fallback; the backend is held until probes pass twice', async (t) => {
  const { world, runtime, probe, health, rescued } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  t.is(runtime.state().serving['voice.llm'], onGpu);
  world.behaviour.tokenDelayMs = 20;
  world.behaviour.loadFails.set('opencl', 'vkCreateInstance failed: no usable driver');
  const gpuHost = world.live()[0]!;
  const pending = collect(runtime.serving.stream('voice.llm', { prompt: 'Hello', maxNewTokens: 3 }));
  // Killed once its generation has begun and before its first token (20 ms away), however late that is.
  await until(() => gpuHost.generations > 0, 'the generation to start');
  gpuHost.kill();
  const r = await pending;
  t.is(r.text, '1:0 1:1 1:2 ');
  t.is(r.done?.finishReason, 'length');
  t.is(runtime.state().serving['voice.llm'], onCpu);
  t.deepEqual(
    rescued.map((e) => e.outcome),
    ['retried'],
  );
  t.is(health[0]?.status, 'down');
  // Well past the plain backoff: still on the CPU, the GPU is held while its probes fail.
  await sleep(200);
  await until(() => probe.calls >= 2, 'two failed probes');
  t.is(runtime.state().serving['voice.llm'], onCpu);
  t.is(runtime.state().backends[0]?.backend, 'opencl');
  // The driver is back: two probes in a row, then the runtime returns (once, no flapping).
  world.behaviour.loadFails.clear();
  probe.ok = true;
  const recovered = new Promise<RuntimeEvents['recovered']>((resolve) =>
    runtime.events.once('recovered', resolve),
  );
  t.deepEqual(await recovered, { slots: ['voice.llm'], key: onGpu });
  await runtime.settled();
  t.is(runtime.state().serving['voice.llm'], onGpu);
  const probesOk = health.filter((e) => e.status === 'probe' && e.ok);
  t.true(probesOk.length >= 2);
  t.is(health.at(-1)?.status, 'up');
  t.deepEqual(runtime.state().backends, []);
  await runtime.stop();
});

test('a request that had streamed tokens ends with finish reason backend-lost; the next turn is answered', async (t) => {
  const { world, runtime, rescued } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  world.behaviour.tokenDelayMs = 10;
  world.behaviour.loadFails.set('opencl', 'vkCreateInstance failed: no usable driver');
  const gpuHost = world.live()[0]!;
  const r = await collect(runtime.serving.stream('voice.llm', { prompt: 'Hello', maxNewTokens: 20 }), (n) => {
    if (n === 2) gpuHost.kill();
  });
  t.true(r.text.startsWith('1:0 1:1 '));
  t.is(r.done?.finishReason, 'backend-lost');
  t.regex(r.done?.detail ?? '', /exited unexpectedly|connection closed/);
  t.is(rescued.at(-1)?.outcome, 'cut-short');
  const next = await collect(runtime.serving.stream('voice.llm', { prompt: 'And then?', maxNewTokens: 2 }));
  t.is(next.text, '1:0 1:1 ');
  t.is(runtime.state().serving['voice.llm'], onCpu);
  await runtime.stop();
});
