import test from 'ava';
import {
  type CatalogModel,
  defaultPlanPolicy,
  type PlanBoard,
  type SlotSpec,
} from '../../agent/plan/types.js';
import type { EngineFailure } from '../../agent/runtime/engine/engine-port.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import type { RuntimeEvents } from '../../agent/runtime/reconciling/events.js';
import { Runtime, type RuntimeOptions } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { type Clock, sleep, systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { until } from '../helpers/until.js';
import { FakeWorld, StoppableClock, stopAfterTests } from './runtime-fakes.js';
import { MiB, testBoard, tinyLlm } from './runtime-parts.js';

// The shared fixture board, with OpenCL missing: these tests exercise what is left when it is.
const board: PlanBoard = {
  ...testBoard,
  backends: [
    { backend: 'cpu', available: true, reason: 'always' },
    { backend: 'opencl', available: false, reason: 'no libOpenCL.so' },
  ],
};

const slots: SlotSpec[] = [
  { slot: 'voice.vad', use: { builtin: 'energy-vad' }, priority: 100, contextTokens: 0, enabled: true },
  {
    slot: 'voice.llm',
    use: { model: { id: 'tiny-llm', version: '1' } },
    priority: 80,
    contextTokens: 256,
    enabled: true,
  },
  {
    slot: 'vision.vlm',
    use: { model: { id: 'tiny-llm', version: '1' } },
    priority: 50,
    contextTokens: 256,
    enabled: true,
  },
];

function setup(
  options: Partial<RuntimeOptions> = {},
  extraModels: CatalogModel[] = [],
  planBoard = board,
  clock: Clock = systemClock,
) {
  const world = new FakeWorld();
  const db = openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] });
  const log = createMemoryLogger();
  const runtime = new Runtime({
    db,
    clock,
    log,
    hosts: world,
    memory: world,
    sources: {
      board: () => planBoard,
      catalog: () => ({ models: [tinyLlm('1'), tinyLlm('2'), ...extraModels] }),
    },
    policy: defaultPlanPolicy,
    options: {
      drainTimeoutMs: 500,
      drainGraceMs: 100,
      acquireTimeoutMs: 5_000,
      memoryReserveBytes: 256 * MiB,
      release: { timeoutMs: 200, pollMs: 5, tolerance: 0.1 },
      runnerBackoff: { baseMs: 20, maxMs: 200 },
      ...options,
    },
  });
  stopAfterTests(runtime);
  const events = {
    switch: listen(runtime, 'switch'),
    fallback: listen(runtime, 'fallback'),
    recovered: listen(runtime, 'recovered'),
    'memory-released': listen(runtime, 'memory-released'),
    plan: listen(runtime, 'plan'),
    drain: listen(runtime, 'drain'),
    'step-failed': listen(runtime, 'step-failed'),
  };
  return { world, runtime, events, log, db };
}

/** Every payload of one event, in order. */
function listen<K extends keyof RuntimeEvents & string>(runtime: Runtime, name: K): RuntimeEvents[K][] {
  const seen: RuntimeEvents[K][] = [];
  runtime.events.on(name, (p) => {
    seen.push(p);
  });
  return seen;
}

async function ready(runtime: Runtime): Promise<void> {
  await runtime.settled();
}

/** Keeps `n` requests in flight on a slot until stopped; counts what failed and why. */
function load(runtime: Runtime, slot: 'voice.llm' | 'vision.vlm', n: number) {
  let running = true;
  const failures: string[] = [];
  const served = new Map<string, number>();
  const workers = Array.from({ length: n }, async () => {
    while (running) {
      try {
        const r = await runtime.serving.generate(slot, { prompt: 'Hello', maxNewTokens: 3 });
        served.set(r.instanceKey, (served.get(r.instanceKey) ?? 0) + 1);
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
  });
  return {
    failures,
    served,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

const v1 = 'tiny-llm@1/fp32|cpu t2 p:low m:low cpus:any';
const v2 = 'tiny-llm@2/fp32|cpu t2 p:low m:low cpus:any';
const v1cl = 'tiny-llm@1/fp32|opencl t68 p:low m:low cpus:any';

const silero: CatalogModel = {
  id: 'silero-vad',
  version: '5',
  kind: 'vad',
  variants: [
    {
      variantId: 'cpu-fp32',
      quant: 'fp32',
      weightBytes: 2 * MiB,
      kvBytesPerToken: 0,
      backends: ['cpu'],
      configPath: '/m/silero-vad/config.json',
    },
  ],
};

test('a VAD model slot is hosted as a graph: warmed up by a forward, served by forward, refused as a prompt', async (t) => {
  const { world, runtime } = setup({}, [silero]);
  await runtime.configure([
    {
      slot: 'voice.vad',
      use: { model: { id: 'silero-vad' } },
      priority: 100,
      contextTokens: 0,
      enabled: true,
    },
    slots[1]!,
  ]);
  await ready(runtime);
  const vadHost = world.live().find((h) => h.spec?.modelId === 'silero-vad');
  t.is(vadHost?.spec?.kind, 'vad');
  t.is(vadHost?.forwards, 1, 'the warm-up is one forward, not a generation');
  t.deepEqual(runtime.slotInfo('voice.vad'), {
    status: 'placed',
    modelId: 'silero-vad',
    version: '5',
    kind: 'vad',
  });
  t.deepEqual(runtime.slotInfo('vision.vlm'), { status: 'unconfigured' });
  const speech = new Float32Array(576).fill(0.5);
  const [prob, state] = await runtime.serving.forward('voice.vad', [
    { data: speech, shape: [1, 576] },
    { data: new Float32Array(256).fill(0.25), shape: [2, 1, 128] },
    { data: new Int32Array([16000]), shape: [] },
  ]);
  t.deepEqual([...prob!.data], [Math.fround(0.9)]);
  t.is(state!.data[0], 0.25);
  await t.throwsAsync(runtime.serving.generate('voice.vad', { prompt: 'x' }), {
    message: 'slot voice.vad is served by silero-vad, a vad model: it takes tensors (forward), not prompts',
  });
  await t.throwsAsync(runtime.serving.forward('voice.llm', []), {
    message: 'slot voice.llm is served by tiny-llm, a language model: it takes prompts, not tensors',
  });
  const { loadSplit, ...vad } = runtime.slotStats().find((s) => s.slot === 'voice.vad')!;
  t.deepEqual(vad, {
    slot: 'voice.vad',
    model: 'silero-vad@5',
    variant: 'cpu-fp32',
    backend: 'cpu',
    requests: 1,
    errors: 0,
    hostRssBytes: 100 * MiB,
  });
  // Its start is timed like any other instance's (the forward counts as the warm-up).
  t.true(loadSplit?.warmUpMs !== undefined && loadSplit.hostStartMs !== undefined);
  await runtime.stop();
});

test('speech from a slot streams the host talker chunks and counts the request', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  const chunks: number[] = [];
  for await (const c of runtime.serving.speak('voice.llm', { text: 'good morning' }))
    chunks.push(c.samples.length);
  t.deepEqual(chunks, [24 * 4, 24 * 7]);
  await t.throwsAsync(
    async () => {
      for await (const _ of runtime.serving.speak('voice.vad', { text: 'x' })) {
        // refused before any chunk
      }
    },
    {
      message:
        'slot voice.vad is served by the built-in energy-vad, which runs in the workload, not in an engine host',
    },
  );
  t.is(runtime.slotStats().find((s) => s.slot === 'voice.llm')?.requests, 1);
  await runtime.stop();
});

test('cold start: the shared model is loaded once, serves both slots, and the built-in VAD needs no host', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  t.is(world.live().length, 1);
  t.deepEqual(runtime.state().serving, { 'voice.llm': v1, 'vision.vlm': v1 });
  const r = await runtime.serving.generate('vision.vlm', { prompt: 'Hello', maxNewTokens: 2 });
  t.is(r.text, '1:0 1:1 ');
  t.is(r.instanceKey, v1);
  const vad = await runtime.serving.acquire('voice.vad');
  t.deepEqual({ kind: vad.kind, slot: vad.slot }, { kind: 'builtin', slot: 'voice.vad' });
  await t.throwsAsync(runtime.serving.generate('voice.vad', { prompt: 'x' }), {
    message:
      'slot voice.vad is served by the built-in energy-vad, which runs in the workload, not in an engine host',
  });
  await t.throwsAsync(runtime.serving.acquire('voice.tts'), { message: 'slot voice.tts is not configured' });
  await runtime.stop();
});

test('OTA version change: blue/green swap under load, 0 failed requests, old host gone and memory back', async (t) => {
  const { world, runtime, events } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  const traffic = load(runtime, 'voice.llm', 4);
  await until(() => (traffic.served.get(v1) ?? 0) > 0, `a request served by ${v1}`);
  await runtime.setModelVersion('tiny-llm', '2', 'job-7');
  await ready(runtime);
  await until(() => (traffic.served.get(v2) ?? 0) > 0, `a request served by ${v2}`);
  await traffic.stop();
  t.deepEqual(traffic.failures, []);
  t.true((traffic.served.get(v1) ?? 0) > 0);
  t.true((traffic.served.get(v2) ?? 0) > 0);
  t.deepEqual(runtime.state().serving, { 'voice.llm': v2, 'vision.vlm': v2 });
  const flip = events.switch!.find((s) => s.to === v2)!;
  t.deepEqual(flip.slots, ['voice.llm', 'vision.vlm']);
  t.deepEqual(flip.from, [v1]);
  t.is(flip.strategy, 'blue-green');
  t.is(world.live().length, 1);
  const released = events['memory-released']!.find((m) => m.instanceKey === v1)!;
  t.true(released.processGone);
  t.true(released.ok);
  t.is(released.memAvailableAfterBytes - released.memAvailableBeforeBytes, 100 * MiB);
  const doc = runtime.document();
  t.is(doc.slots.find((s) => s.slot === 'voice.llm')!.sources.version, 'ota');
  await runtime.stop();
});

test('no room for both: stop-then-load, requests wait for the new instance instead of failing', async (t) => {
  const { world, runtime, events } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.memAvailable = 700 * MiB; // 444 MiB above the reserve; the new instance needs 612 MiB
  const traffic = load(runtime, 'voice.llm', 3);
  await until(() => (traffic.served.get(v1) ?? 0) > 0, `a request served by ${v1}`);
  await runtime.setModelVersion('tiny-llm', '2', 'job-8');
  await ready(runtime);
  await until(() => (traffic.served.get(v2) ?? 0) > 0, `a request served by ${v2}`);
  await traffic.stop();
  t.deepEqual(traffic.failures, []);
  const plan = events.plan!.at(-1)!;
  t.deepEqual(plan.strategies, { [v2]: 'stop-then-load' });
  t.deepEqual(plan.notes, [
    `${v2}: stop-then-load: it needs 612 MiB but only 444 MiB is available above the 256 MiB reserve while ` +
      `${v1} is loaded; voice.llm, vision.vlm wait unserved during the swap`,
  ]);
  t.deepEqual(plan.steps.slice(0, 2), ['switch voice.llm, vision.vlm → (unserved)', `drain ${v1}`]);
  await runtime.stop();
});

test('memory short for a swap: conversation snapshots are dropped first, and then the old model need not stop', async (t) => {
  const { world, runtime, events } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.memAvailable = 700 * MiB; // 444 MiB above the reserve; the new instance needs 612 MiB
  world.snapshotBytes = 200 * MiB; // what the old instance's snapshots give back
  const old = world.live()[0]!;
  await runtime.setModelVersion('tiny-llm', '2', 'job-10');
  await ready(runtime);
  t.is(old.snapshotDrops, 1);
  const plan = events.plan!.at(-1)!;
  t.deepEqual(plan.strategies, { [v2]: 'blue-green' });
  t.deepEqual(runtime.state().serving, { 'voice.llm': v2, 'vision.vlm': v2 });
  await runtime.stop();
});

test('a request still running at the drain deadline is cancelled with a clear error', async (t) => {
  const { world, runtime, events } = setup({ drainTimeoutMs: 30, drainGraceMs: 200 });
  await runtime.configure(slots);
  await ready(runtime);
  world.behaviour.tokenDelayMs = 20;
  // 10,000 tokens: still running at the deadline however slowly this machine gets to the swap.
  const long = runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 10_000 });
  await until(() => world.live()[0]!.tokensSent > 0, 'the first token');
  await runtime.setModelVersion('tiny-llm', '2', 'job-9');
  await t.throwsAsync(long, {
    message: `request cancelled: ${v1} was being replaced and the 30 ms drain deadline passed`,
  });
  await ready(runtime);
  t.is(events.drain!.find((d) => d.instanceKey === v1)!.cancelled, 1);
  await runtime.stop();
});

test('SIGKILL of a host mid-generation: that request fails clearly, the slot serves again', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.behaviour.tokenDelayMs = 10;
  const victim = world.live()[0]!;
  const inflight = runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 10_000 });
  await until(() => victim.tokensSent > 1, 'two tokens');
  victim.kill();
  const err = await t.throwsAsync(inflight);
  t.is(
    err?.message,
    `request failed: engine host pid ${victim.pid} for ${v1} exited unexpectedly (signal SIGKILL)`,
  );
  t.is((err as EngineFailure).kind, 'crash');
  world.behaviour.tokenDelayMs = 1;
  const after = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 2 });
  t.is(after.text, '1:0 1:1 ');
  t.not(world.live()[0]!.pid, victim.pid);
  const failure = runtime.state().failures.find((f) => f.key === v1)!;
  t.is(failure.reason, `engine host pid ${victim.pid} for ${v1} exited unexpectedly (signal SIGKILL)`);
  await runtime.stop();
});

test('restart: in-flight requests are cancelled with the reason, a fresh host serves, no failure is counted', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.behaviour.tokenDelayMs = 10;
  const before = world.live()[0]!;
  const inflight = runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 10_000 });
  await until(() => before.tokensSent > 1, 'two tokens');
  t.deepEqual(runtime.restart(['voice.llm'], 'operator restart-workload voice'), [v1]);
  const err = await t.throwsAsync(inflight);
  t.is(err?.message, 'request cancelled: operator restart-workload voice');
  world.behaviour.tokenDelayMs = 1;
  const after = await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 2 });
  t.is(after.text, '1:0 1:1 ');
  t.not(world.live()[0]!.pid, before.pid);
  t.false(before.alive, 'the old host was stopped');
  t.deepEqual(runtime.state().failures, []);
  t.deepEqual(runtime.restart(['voice.tts'], 'nothing serves it'), []);
  await runtime.stop();
});

test('a pinned backend that fails to load falls back to the CPU with the reason, then retries it later', async (t) => {
  // The clock stands still until the fallback is announced: the retry is then exactly the backoff away,
  // however long this machine took to get there.
  const clock = new StoppableClock();
  const { world, runtime, events } = setup(
    { failureBackoff: { baseMs: 150, maxMs: 1000, forgetAfterMs: 60_000 } },
    [],
    board,
    clock,
  );
  clock.stop();
  world.behaviour.loadFails.set('opencl', 'OpenCL backend: clGetPlatformIDs returned -1001 (no ICD)');
  await runtime.configure(slots);
  await runtime.pin('voice.llm', { backend: 'opencl' }, 'dashboard:alice');
  await ready(runtime);
  t.is(runtime.state().serving['voice.llm'], v1);
  const fb = events.fallback!.at(-1)!;
  t.deepEqual(fb, {
    slots: ['voice.llm'],
    fromKey: v1cl,
    toKey: v1,
    reason: 'load failed: OpenCL backend: clGetPlatformIDs returned -1001 (no ICD)',
    retryInMs: 150,
  });
  // The driver gets fixed; the preferred backend is retried after its backoff and the slot moves back.
  world.behaviour.loadFails.clear();
  clock.resumeAfter(150);
  const recovered = new Promise<RuntimeEvents['recovered']>((resolve) =>
    runtime.events.once('recovered', resolve),
  );
  const r = await recovered;
  t.deepEqual(r, { slots: ['voice.llm'], key: v1cl });
  await ready(runtime);
  t.is(runtime.state().serving['voice.llm'], v1cl);
  await runtime.stop();
});

test('a backend fault at run time fails that request and moves the slot down its chain', async (t) => {
  const { world, runtime, events } = setup();
  await runtime.configure(slots);
  await runtime.pin('vision.vlm', { backend: 'opencl' }, 'fleet:ops');
  await ready(runtime);
  t.is(runtime.state().serving['vision.vlm'], v1cl);
  world.behaviour.generateFaults.set('opencl', 'CL_OUT_OF_RESOURCES in clEnqueueNDRangeKernel');
  await t.throwsAsync(runtime.serving.generate('vision.vlm', { prompt: 'Hello' }), {
    message: 'CL_OUT_OF_RESOURCES in clEnqueueNDRangeKernel',
  });
  await ready(runtime);
  t.is(runtime.state().serving['vision.vlm'], v1);
  t.is(
    events.fallback!.at(-1)!.reason,
    `backend fault on ${v1cl}: CL_OUT_OF_RESOURCES in clEnqueueNDRangeKernel`,
  );
  const r = await runtime.serving.generate('vision.vlm', { prompt: 'Hello', maxNewTokens: 1 });
  t.is(r.instanceKey, v1);
  await runtime.stop();
});

test('writes to the desired state are validated with specific messages', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await t.throwsAsync(runtime.pin('voice.foo' as 'voice.llm', { backend: 'cpu' }, 'x'), {
    message:
      'Unknown slot "voice.foo" (expected one of: voice.vad, voice.wake, voice.asr, voice.llm, voice.tts, voice.omni, vision.vlm)',
  });
  await t.throwsAsync(runtime.pin('voice.llm', { backend: 'tpu' as 'cpu' }, 'x'), {
    message:
      'Unknown backend_type "tpu" in the pin for voice.llm: this board allows cpu; known but unusable here: opencl (no libOpenCL.so)',
  });
  await t.throwsAsync(runtime.pin('voice.llm', {}, 'x'), {
    message: 'Empty pin for voice.llm: clear the pin instead',
  });
  await t.throwsAsync(runtime.setModelVersion('tiny llm', '2', 'job'), {
    message: 'Invalid model id "tiny llm"',
  });
  await runtime.stop();
});

test('precedence: config < planner < operator pin < OTA job, and the document says who decided', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await runtime.pin('voice.llm', { version: '1', threads: 1 }, 'dashboard:bob');
  await runtime.setModelVersion('tiny-llm', '2', 'job-1');
  const doc = runtime.document();
  const llm = doc.slots.find((s) => s.slot === 'voice.llm')!;
  t.deepEqual(llm.sources, {
    model: 'config',
    version: 'ota',
    variant: 'planner',
    backend: 'planner',
    threads: 'operator',
    precision: 'planner',
    memory: 'planner',
  });
  t.is(llm.planner?.instanceKey, 'tiny-llm@2/fp32|cpu t1 p:low m:low cpus:any');
  t.deepEqual(llm.ota, {
    modelId: 'tiny-llm',
    version: '2',
    author: 'ota:job-1',
    updatedAt: llm.ota!.updatedAt,
  });
  // The pinned thread count splits voice.llm from vision.vlm: two instances now.
  t.not(
    runtime.desired.placement()!.slots.find((s) => s.slot === 'vision.vlm')!.instanceKey,
    llm.planner?.instanceKey,
  );
  t.true(doc.revision >= 4);
  await runtime.stop();
});

test('probe models: one result per candidate, stored under board + engine + config, then used by the plan', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  const seen: string[] = [];
  const results = await runtime.probeModels(
    { modelId: 'tiny-llm' },
    { onResult: (r) => seen.push(r.version) },
  );
  t.deepEqual(seen, ['1', '2']);
  t.deepEqual(
    results.map((r) => [r.modelId, r.version, r.variantId, r.config, r.engineVersion, r.boardId, r.ok]),
    [
      ['tiny-llm', '1', 'fp32', 'cpu t2 p:low m:low cpus:any', '3.6.1-test', 'test-board', true],
      ['tiny-llm', '2', 'fp32', 'cpu t2 p:low m:low cpus:any', '3.6.1-test', 'test-board', true],
    ],
  );
  // The fake engine reports 3 prompt tokens in 1 ms and 32 tokens in 32 ms.
  t.is(results[0]!.prefillTokPerSec, 3000);
  t.is(results[0]!.decodeTokPerSec, 1000);
  t.is(results[0]!.peakRssBytes, 110 * MiB);
  t.deepEqual(runtime.probes.forBoard('test-board', '3.6.1-test').length, 2);
  t.deepEqual(runtime.probes.forBoard('other-board', '3.6.1-test'), []);
  const inst = runtime.desired.placement()!.instances[0]!;
  t.regex(
    inst.reasons[0]!,
    /^fp32 on cpu: measured: decode 1000 tok\/s, prefill 3000 tok\/s, load \d+ ms, peak RSS 110 MiB$/,
  );
  await runtime.stop();
});

test('a failed probe is stored; a failed CPU probe is reported but the CPU stays the floor', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.behaviour.loadFails.set('cpu', 'out of memory while loading weights');
  const results = await runtime.probeModels({ modelId: 'tiny-llm', version: '2' });
  t.deepEqual(
    results.map((r) => [r.ok, r.error]),
    [[false, 'out of memory while loading weights']],
  );
  world.behaviour.loadFails.clear();
  await runtime.setModelVersion('tiny-llm', '2', 'job');
  const inst = runtime.desired.placement()!.instances[0]!;
  t.is(
    inst.reasons[0],
    'fp32 on cpu: probe failed on this board: out of memory while loading weights; kept as the CPU floor',
  );
  await ready(runtime);
  t.is((await runtime.serving.generate('vision.vlm', { prompt: 'Hello', maxNewTokens: 1 })).text, '2:0 ');
  await runtime.stop();
});

test('a load that hangs (driver stuck) times out, counts as a failed candidate and falls back', async (t) => {
  // Long enough that the CPU fallback's own (instant) load never hits it on a loaded machine.
  const { world, runtime, events } = setup({ startupTimeoutMs: 1000 });
  world.behaviour.loadHangs.add('opencl');
  await runtime.configure(slots);
  await runtime.pin('voice.llm', { backend: 'opencl' }, 'test');
  await ready(runtime);
  t.is(runtime.state().serving['voice.llm'], v1);
  t.is(events.fallback.at(-1)!.reason, 'load failed: did not finish within 1000 ms');
  const hung = world.hosts.find((h) => h.spec === undefined)!;
  t.false(hung.alive);
  await runtime.stop();
});

test('the watchdog cancels a reconcile run stuck past its limit', async (t) => {
  const { world, runtime } = setup({
    stuckAfterMs: 40,
    startupTimeoutMs: 60_000,
    runnerBackoff: { baseMs: 10_000, maxMs: 10_000 },
  });
  world.behaviour.loadHangs.add('cpu');
  const errors = listen(runtime, 'runner-error');
  await runtime.configure(slots);
  runtime.start();
  while (!errors.some((e) => e.error.startsWith('a run has been going for'))) await sleep(10);
  await runtime.settled();
  t.is(runtime.state().instances.length, 0);
  t.regex(
    runtime.health().lastError ?? '',
    /^reconcile run cancelled by the watchdog: a run has been going for \d+ ms \(limit 40 ms\)$/,
  );
  await runtime.stop();
});

test('the hosts RSS is refreshed for the dashboard while they serve', async (t) => {
  const { runtime } = setup({ tickMs: 10 });
  await runtime.configure(slots);
  runtime.start();
  await ready(runtime);
  // Sampled every 10 ms: wait for the first sample rather than for a guessed time.
  await until(() => (runtime.state().instances[0]?.rssBytes ?? 0) > 0, 'an RSS sample');
  const inst = runtime.state().instances[0]!;
  t.deepEqual(
    [inst.rssBytes, inst.peakRssBytes, inst.status, inst.modelId, inst.version],
    [100 * MiB, 110 * MiB, 'ready', 'tiny-llm', '1'],
  );
  await runtime.stop();
});

test('the loop watchdog ticks only while it has a run or an instance to watch', async (t) => {
  // An idle agent with nothing placed must not wake up every tick for nobody (issue 31, bench/idle).
  const { runtime } = setup({ tickMs: 10 });
  await runtime.configure([]);
  t.false(runtime.watchdogArmed, 'not armed before start');
  runtime.start();
  t.true(runtime.watchdogArmed, 'armed while the first run goes');
  await runtime.settled();
  await until(() => !runtime.watchdogArmed, 'the watchdog to stand down with nothing hosted');
  await runtime.configure(slots);
  await ready(runtime);
  t.true(runtime.watchdogArmed, 'a run re-arms it');
  await until(() => (runtime.state().instances[0]?.rssBytes ?? 0) > 0, 'an RSS sample');
  t.true(runtime.watchdogArmed, 'it stays armed while an instance is hosted');
  await runtime.stop();
  t.false(runtime.watchdogArmed, 'stop disarms it');
});

test('a stopped host whose memory does not come back is reported with the numbers', async (t) => {
  const { world, runtime, events, log } = setup();
  await runtime.configure(slots);
  await ready(runtime);
  world.leakOnExit = true;
  await runtime.setModelVersion('tiny-llm', '2', 'job-leak');
  await ready(runtime);
  const check = events['memory-released'].find((m) => m.instanceKey === v1)!;
  t.like(check, {
    processGone: true,
    ok: false,
    rssAtStopBytes: 100 * MiB,
    anonAtStopBytes: 100 * MiB,
    peakRssBytes: 110 * MiB,
  });
  t.is(check.memAvailableAfterBytes, check.memAvailableBeforeBytes);
  t.true(log.lines.some((l) => l.includes('"msg":"memory not verified released"')));
  await runtime.stop();
});

test('a pin to a backend whose evidence chain failed is refused with that step, and nothing changes', async (t) => {
  const chained: PlanBoard = {
    ...board,
    backends: [
      ...board.backends,
      {
        backend: 'vulkan',
        available: false,
        reason: 'VK_ICD_FILENAMES=/nowhere.json points at nothing usable (/nowhere.json)',
        failedStep: {
          step: 'icd',
          detail: 'VK_ICD_FILENAMES=/nowhere.json points at nothing usable (/nowhere.json)',
        },
      },
    ],
  };
  const { runtime } = setup({}, [], chained);
  await runtime.configure(slots);
  const before = runtime.document();
  const err = await t.throwsAsync(runtime.pin('voice.llm', { backend: 'vulkan' }, 'dashboard:alice'));
  t.is(
    err?.message,
    'Pin of voice.llm to vulkan refused: its icd step failed: VK_ICD_FILENAMES=/nowhere.json points at nothing usable (/nowhere.json). Nothing was changed',
  );
  t.is((err as { code?: string }).code, 'EBACKEND');
  t.deepEqual(runtime.document(), before);
  await runtime.stop();
});
