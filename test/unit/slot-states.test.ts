import test from 'ava';
import type { BackendType, Candidate, Placement } from '../../agent/plan/types.js';
import {
  runtimeHealth,
  type SlotStateInput,
  slotProblems,
  slotStates,
} from '../../agent/runtime/measuring/slot-states.js';

function candidate(variant: string, backend: BackendType, threads = 4): Candidate {
  const config = {
    backend_type: backend,
    thread_num: threads,
    precision: 'low' as const,
    memory: 'low' as const,
    cpus: [],
  };
  return {
    key: `tiny-llm@1.0.0/${variant}|${backend} t${threads} p:low m:low cpus:any`,
    modelId: 'tiny-llm',
    version: '1.0.0',
    variantId: variant,
    quant: 'fp32',
    configPath: '/m/config.json',
    config,
    memoryBytes: 100 * 1048576,
    evidence: { kind: 'static', rank: 0 },
    refSeconds: undefined,
    summary: 'not measured, no prior: static order #1 (opencl > cpu)',
  };
}

const gpu = candidate('gpu-fp16', 'opencl');
const cpu = candidate('cpu-fp32', 'cpu');

function placement(status: 'placed' | 'degraded' = 'placed'): Placement {
  return {
    boardId: 'test-board',
    engineVersion: '3.0.0',
    budget: { ramBytes: 8 << 30, budgetBytes: 4 << 30, plannedBytes: 100 << 20, reason: 'half the RAM' },
    instances: [
      {
        key: gpu.key,
        chosen: gpu,
        fallback: [cpu],
        slots: ['voice.llm'],
        priority: 1,
        reasons: [
          'gpu-fp16 on opencl: not measured',
          'memory 100.0 MiB = weights 80.0 MiB + KV cache 20.0 MiB',
        ],
      },
    ],
    slots: [
      {
        slot: 'voice.llm',
        status,
        instanceKey: gpu.key,
        reasons: [
          `served by ${gpu.key}`,
          ...(status === 'degraded' ? ['degraded: gpu-fp32 needs 900 MiB'] : []),
        ],
      },
      { slot: 'voice.vad', status: 'builtin', builtin: 'energy-vad', reasons: ['built-in energy-vad'] },
      { slot: 'vision.vlm', status: 'unloaded', reasons: ['no model tiny-vlm installed'] },
      { slot: 'voice.tts', status: 'disabled', reasons: ['disabled in config'] },
    ],
  };
}

const base: SlotStateInput = {
  placement: placement(),
  serving: {},
  instances: [],
  active: [{ plannedKey: gpu.key, active: gpu }],
  failures: [],
  engine: { available: true },
};

function llm(input: SlotStateInput) {
  return slotStates(input).find((s) => s.slot === 'voice.llm')!;
}

test('engine missing: a placed slot is failed with the engine reason, never "serving"', (t) => {
  const reason =
    'MNN engine not available: the engine addon is not built. Set MNN_ROOT and run npm run build:engine.';
  const s = llm({ ...base, engine: { available: false, reason } });
  t.is(s.phase, 'failed');
  t.false(s.servable);
  t.is(s.reason, reason);
  t.is(s.summary, 'Planned tiny-llm@1.0.0 (gpu-fp16) on OpenCL, but it cannot run.');
  t.is(s.servedBy, undefined);
  t.true(
    slotProblems(slotStates({ ...base, engine: { available: false, reason } })).some((p) =>
      p.includes(reason),
    ),
  );
});

test('planned → loading → serving, each saying so; the Why list has no planner key', (t) => {
  t.is(llm(base).phase, 'planned');
  const loading = llm({ ...base, instances: [{ key: gpu.key, status: 'loading' }] });
  t.is(loading.phase, 'loading');
  t.is(loading.summary, 'Loading tiny-llm@1.0.0 (gpu-fp16) on OpenCL (loading).');
  const serving = llm({
    ...base,
    serving: { 'voice.llm': gpu.key },
    instances: [{ key: gpu.key, status: 'ready' }],
  });
  t.is(serving.phase, 'serving');
  t.true(serving.servable);
  t.is(serving.summary, 'Serving tiny-llm@1.0.0 (gpu-fp16) on OpenCL.');
  t.deepEqual(serving.why, [
    'gpu-fp16 on opencl: not measured',
    'memory 100.0 MiB = weights 80.0 MiB + KV cache 20.0 MiB',
  ]);
  for (const s of slotStates(base))
    t.false(
      [s.summary, s.reason ?? '', ...s.why].some((x) => x.includes('|')),
      s.slot,
    );
});

test('a load failure is failed with its reason and attempts; a fallback that runs says what failed', (t) => {
  const failed = llm({
    ...base,
    failures: [{ key: gpu.key, reason: 'load failed: tiny-llm/llm.mnn is truncated', count: 3 }],
  });
  t.is(failed.phase, 'failed');
  t.is(failed.summary, 'Planned tiny-llm@1.0.0 (gpu-fp16) on OpenCL, but it failed to load (3 attempts).');
  t.is(failed.reason, 'Load failed: tiny-llm/llm.mnn is truncated.');
  const retrying = llm({
    ...base,
    instances: [{ key: gpu.key, status: 'loading' }],
    failures: [{ key: gpu.key, reason: 'load failed: tiny-llm/llm.mnn is truncated', count: 3 }],
  });
  t.is(retrying.phase, 'loading');
  t.is(retrying.reason, 'Retrying after 3 failed attempts: load failed: tiny-llm/llm.mnn is truncated.');
  // /v1/models lists a first load, not a retry of one that failed (agent/workloads/module.ts).
  t.is(retrying.retryAfterFailures, 3);
  t.is(llm({ ...base, instances: [{ key: gpu.key, status: 'loading' }] }).retryAfterFailures, undefined);
  // The loop's last error names the candidate by its key; the page gets the model in words.
  const loopError = llm({ ...base, lastError: `${cpu.key}: load failed: bad tokenizer` });
  t.is(loopError.reason, 'tiny-llm@1.0.0 (cpu-fp32): load failed: bad tokenizer.');
  const fallback = llm({
    ...base,
    active: [{ plannedKey: gpu.key, active: cpu, fallback: { reason: 'OpenCL device lost' } }],
    serving: { 'voice.llm': cpu.key },
    instances: [{ key: cpu.key, status: 'ready' }],
  });
  t.is(fallback.phase, 'fallback');
  t.true(fallback.servable);
  t.is(fallback.servedBy?.label, 'tiny-llm@1.0.0 (cpu-fp32) on CPU, 4 threads');
  t.is(
    fallback.reason,
    'tiny-llm@1.0.0 (gpu-fp16) on OpenCL failed (OpenCL device lost), so tiny-llm@1.0.0 (cpu-fp32) on CPU, 4 threads runs instead.',
  );
});

test('degraded, builtin, disabled, unplaceable and configured-but-unplanned slots', (t) => {
  const states = slotStates({
    ...base,
    placement: placement('degraded'),
    configured: ['voice.llm', 'voice.asr'],
    serving: { 'voice.llm': gpu.key },
    instances: [{ key: gpu.key, status: 'ready' }],
  });
  const by = Object.fromEntries(states.map((s) => [s.slot, s]));
  t.like(by['voice.llm'], { phase: 'degraded', servable: true, reason: 'Degraded: gpu-fp32 needs 900 MiB.' });
  t.like(by['voice.vad'], { phase: 'builtin', servable: true, builtin: 'energy-vad' });
  t.like(by['voice.tts'], { phase: 'disabled', servable: false });
  t.like(by['vision.vlm'], { phase: 'failed', servable: false, reason: 'No model tiny-vlm installed.' });
  t.like(by['voice.asr'], { phase: 'planned', servable: false });
  t.deepEqual(slotProblems(states), [
    'slot vision.vlm cannot serve: No model tiny-vlm installed.',
    'slot voice.asr cannot serve: The runtime has not placed it yet.',
  ]);
});

test('runtime health: never healthy while a configured slot cannot serve; the loop reason is not repeated', (t) => {
  const engine =
    'MNN engine not available: the engine addon is not built. Set MNN_ROOT and run npm run build:engine.';
  const source = (over: {
    unavailable?: string;
    loop?: { healthy: boolean; reason: string; lastError?: string };
  }) => ({
    state: () => ({ ...base, health: { lastError: over.loop?.lastError } }),
    document: () => ({ slots: [{ slot: 'voice.llm' as const, config: {} }] }),
    engineUnavailableReason: over.unavailable,
    health: () => ({ healthy: true, reason: 'ok', lastError: undefined, ...over.loop }),
  });
  const noEngine = runtimeHealth(
    source({
      unavailable: engine,
      loop: { healthy: false, reason: `8 failed run(s) in a row: ${engine}`, lastError: engine },
    }),
  );
  t.false(noEngine.healthy);
  t.true(
    noEngine.problems.some((p) => p.startsWith('slot voice.llm cannot serve: MNN engine not available')),
  );
  t.false(noEngine.problems.some((p) => p.startsWith('runtime:')));
  t.true(noEngine.problems.some((p) => p.startsWith('slot vision.vlm cannot serve')));
});
