import test from 'ava';
import { configKey } from '../../agent/plan/config-key.js';
import { explainPlacement } from '../../agent/plan/explain.js';
import { planPlacement } from '../../agent/plan/planner.js';
import {
  defaultPlanPolicy,
  type Placement,
  type PlanBoard,
  type PlanInput,
  type ProbeResult,
  type SlotSpec,
} from '../../agent/plan/types.js';
import { applianceSlots, boards, catalog, probe, slot } from './plan-fixtures.js';

function plan(board: PlanBoard, slots: SlotSpec[], extra: Partial<PlanInput> = {}): Placement {
  return planPlacement({
    board,
    catalog: { models: catalog },
    slots,
    constraints: {},
    probes: [],
    engineVersion: '3.6.1',
    policy: defaultPlanPolicy,
    ...extra,
  });
}

/** The placement as a table: slot → status and instance, the shape the dashboard shows. */
function table(p: Placement): Record<string, string> {
  return Object.fromEntries(p.slots.map((s) => [s.slot, `${s.status} ${s.instanceKey ?? s.builtin ?? '-'}`]));
}

const cpuGold = 'cpu t4 p:low m:low cpus:4-7';

test('qcs9075: the profile prior puts the shared VLM on the CPU (it beat Hexagon/QNN and OpenCL there)', (t) => {
  const p = plan(boards.qcs9075, applianceSlots);
  t.deepEqual(table(p), {
    'voice.vad': 'builtin energy-vad',
    'voice.asr': `placed sensevoice-small@1.0.0/int8|${cpuGold}`,
    'voice.llm': `placed qwen2-vl-2b@1.1.0/int4|${cpuGold}`,
    'voice.tts': `placed cosyvoice-300m@1.0.0/int8|${cpuGold}`,
    'vision.vlm': `placed qwen2-vl-2b@1.1.0/int4|${cpuGold}`,
  });
  const vlm = p.instances.find((i) => i.slots.includes('vision.vlm'))!;
  t.deepEqual(vlm.slots, ['voice.llm', 'vision.vlm']);
  t.is(vlm.priority, 80);
  t.deepEqual(
    vlm.fallback.map((c) => configKey(c.config)),
    ['npu t1 p:low m:low cpus:any', 'opencl t68 p:low m:low cpus:any'],
  );
  t.is(
    vlm.reasons[0],
    'int4 on cpu: prior (qcs9075 Qwen2-VL-2B int4): decode 9.8 tok/s at 1400 MiB of weights, scaled to 9.8 tok/s',
  );
  t.true(vlm.reasons.includes('4 threads pinned to the fastest cluster gold (2.55 GHz) of 2'));
  t.true(vlm.reasons.includes('shared by voice.llm, vision.vlm: loaded once'));
  t.true(
    vlm.reasons.includes(
      'vs int4 on npu: prior (qcs9075 Qwen2-VL-2B int4): decode 7.1 tok/s at 1400 MiB of weights, scaled to ' +
        '7.1 tok/s (reference request 11.62 s vs 8.60 s)',
    ),
  );
  // One instance for two slots: weights counted once.
  t.is(p.instances.length, 3);
  t.is(p.budget.plannedBytes, (288 + 1504 + 384) * 1024 * 1024);
});

test('measured numbers beat the profile prior, and the placement shows them', (t) => {
  const probes: ProbeResult[] = [
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 14.2, 410),
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', cpuGold, 9.1, 58),
  ];
  const p = plan(boards.qcs9075, applianceSlots, { probes });
  const vlm = p.instances.find((i) => i.slots.includes('vision.vlm'))!;
  t.is(vlm.chosen.config.backend_type, 'npu');
  t.is(
    vlm.reasons[0],
    'int4 on npu: measured: decode 14.2 tok/s, prefill 410 tok/s, load 900 ms, peak RSS 1500 MiB',
  );
  t.deepEqual(
    vlm.fallback.map((c) => `${c.config.backend_type}:${c.evidence.kind}`),
    ['cpu:measured', 'opencl:prior'],
  );
});

test('measurements from another engine version or board are not used', (t) => {
  const probes: ProbeResult[] = [
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 50, 900, {
      engineVersion: '3.5.0',
    }),
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 50, 900, {
      boardId: 'qcs6490',
    }),
  ];
  const p = plan(boards.qcs9075, applianceSlots, { probes });
  t.is(p.instances.find((i) => i.slots.includes('vision.vlm'))!.chosen.config.backend_type, 'cpu');
});

test('a failed probe rules a candidate out and says why', (t) => {
  const probes = [
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 0, 0, {
      ok: false,
      error: 'QNN graph finalize failed (error 6001)',
    }),
  ];
  const p = plan(boards.qcs9075, applianceSlots, { probes });
  const vlm = p.instances.find((i) => i.slots.includes('vision.vlm'))!;
  t.deepEqual(
    vlm.fallback.map((c) => c.config.backend_type),
    ['opencl'],
  );
  t.true(
    vlm.reasons.includes(
      'not int4 on npu: probe failed on this board: QNN graph finalize failed (error 6001)',
    ),
  );
});

test('the newest measurement of a candidate wins', (t) => {
  const probes = [
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 30, 500, {
      measuredAt: 1,
    }),
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 2, 10, {
      measuredAt: 2,
    }),
  ];
  const p = plan(boards.qcs9075, applianceSlots, { probes });
  t.is(p.instances.find((i) => i.slots.includes('vision.vlm'))!.chosen.config.backend_type, 'cpu');
});

test('spacemit-k1 (4 GB): the lowest-priority slot stays unloaded and the plan says so', (t) => {
  const slots = [
    slot('voice.vad', { builtin: 'energy-vad' }, 100),
    slot('voice.asr', { model: { id: 'sensevoice-small' } }, 90),
    slot('voice.llm', { model: { id: 'qwen2.5-1.5b' } }, 80),
    slot('voice.tts', { model: { id: 'cosyvoice-300m' } }, 70),
    slot('vision.vlm', { model: { id: 'qwen2-vl-2b' } }, 50),
  ];
  const p = plan(boards.k1, slots);
  const cpu8 = 'cpu t8 p:low m:low cpus:any';
  t.deepEqual(table(p), {
    'voice.vad': 'builtin energy-vad',
    'voice.asr': `placed sensevoice-small@1.0.0/int8|${cpu8}`,
    'voice.llm': `placed qwen2.5-1.5b@1.0.0/int4|${cpu8}`,
    'voice.tts': `placed cosyvoice-300m@1.0.0/int8|${cpu8}`,
    'vision.vlm': 'unloaded -',
  });
  // budget: floor(3806.99 MiB × 0.75) − 192 MiB; asr 288 + llm 1104 (+ 64 conversation snapshots) + tts 384
  // leave 823 MiB.
  t.is(p.budget.budgetBytes, Math.floor(3_898_372 * 1024 * 0.75) - 192 * 1024 * 1024);
  t.deepEqual(p.slots.find((s) => s.slot === 'vision.vlm')!.reasons, [
    'qwen2-vl-2b@1.1.0 needs at least 1504 MiB but only 823 MiB of the 2663 MiB budget is left after higher-priority slots',
  ]);
  t.true(p.budget.plannedBytes <= p.budget.budgetBytes);
});

test('a text LLM instance counts its conversation snapshots in its memory; the policy can turn them off', (t) => {
  const slots = [slot('voice.llm', { model: { id: 'qwen2.5-1.5b' } }, 80, { contextTokens: 512 })];
  const on = plan(boards.k1, slots);
  const off = plan(boards.k1, slots, {
    policy: { ...defaultPlanPolicy, conversationSnapshots: { max: 1, budgetBytes: 64 * 1024 * 1024 } },
  });
  const chosenOn = on.instances[0]!.chosen;
  const chosenOff = off.instances[0]!.chosen;
  t.like(chosenOn.conversations, { max: 3, budgetBytes: 64 * 1024 * 1024 });
  // The catalog's KV per token goes with it: the engine's own bound from the config ignores grouped-query heads.
  t.true((chosenOn.conversations?.kvBytesPerToken ?? 0) > 0);
  t.is(chosenOff.conversations, undefined);
  t.is(chosenOn.memoryBytes - chosenOff.memoryBytes, 64 * 1024 * 1024);
  t.true(
    on.instances[0]!.reasons.some((r) =>
      r.includes(" + conversation snapshots 64 MiB (up to 2 more conversations' KV)"),
    ),
    on.instances[0]!.reasons.join('\n'),
  );
});

test('spacemit-k1: a slot degrades to a smaller variant when the faster one does not fit', (t) => {
  const cpu8 = 'cpu t8 p:low m:low cpus:any';
  // On this core int8 kernels are faster than int4 unpacking, so int8 is preferred when it fits.
  const probes = [
    probe(boards.k1, 'qwen2.5-1.5b', '1.0.0', 'int8', cpu8, 6.0, 40),
    probe(boards.k1, 'qwen2.5-1.5b', '1.0.0', 'int4', cpu8, 4.5, 30),
  ];
  const slots = [
    slot('voice.asr', { model: { id: 'sensevoice-small' } }, 90),
    slot('vision.vlm', { model: { id: 'qwen2-vl-2b' } }, 85),
    slot('voice.llm', { model: { id: 'qwen2.5-1.5b' } }, 80, { contextTokens: 512 }),
    slot('voice.tts', { model: { id: 'cosyvoice-300m' } }, 40),
  ];
  const policy = { ...defaultPlanPolicy, budgetFraction: 0.9 };
  const p = plan(boards.k1, slots, { probes, policy });
  const llm = p.slots.find((s) => s.slot === 'voice.llm')!;
  t.is(llm.status, 'degraded');
  t.is(llm.instanceKey, `qwen2.5-1.5b@1.0.0/int4|${cpu8}`);
  t.is(llm.reasons[1], 'degraded: int8 on cpu needs 1926 MiB, only 1442 MiB of the budget was left');
  t.is(p.slots.find((s) => s.slot === 'voice.tts')!.status, 'unloaded');
  // The bigger variant cannot be a fallback: it was never reserved.
  const inst = p.instances.find((i) => i.slots.includes('voice.llm'))!;
  t.deepEqual(inst.fallback, []);
});

test('x86 dev host: an operator pin to opencl is honoured against detection, with the CPU as fallback', (t) => {
  const slots = [slot('voice.llm', { model: { id: 'qwen2.5-0.5b' } }, 80)];
  const p = plan(boards.x86, slots, { constraints: { 'voice.llm': { backend: 'opencl' } } });
  const inst = p.instances[0]!;
  t.is(inst.chosen.config.backend_type, 'opencl');
  t.deepEqual(
    inst.fallback.map((c) => configKey(c.config)),
    ['cpu t8 p:low m:low cpus:any'],
  );
  t.true(inst.reasons.includes('backend opencl pinned'));
});

test('x86 dev host without a pin: unavailable backends are rejected with the detector reason', (t) => {
  const slots = [slot('voice.llm', { model: { id: 'qwen2.5-1.5b' } }, 80)];
  const p = plan(boards.x86, slots);
  const inst = p.instances[0]!;
  t.is(configKey(inst.chosen.config), 'cpu t8 p:low m:low cpus:any');
  t.true(inst.reasons.includes('not int4 on opencl: backend unavailable: no libOpenCL.so'));
  t.true(inst.reasons.includes('not int4 on npu: backend unavailable: not detected'));
});

test('rpi5: with no measurements and no priors the static order decides, and says so', (t) => {
  const catalogWithVulkan = catalog.map((m) =>
    m.id === 'qwen2.5-0.5b'
      ? { ...m, variants: m.variants.map((v) => ({ ...v, backends: [...v.backends, 'vulkan' as const] })) }
      : m,
  );
  const p = planPlacement({
    board: boards.rpi5,
    catalog: { models: catalogWithVulkan },
    slots: [slot('voice.llm', { model: { id: 'qwen2.5-0.5b' } }, 80)],
    constraints: {},
    probes: [],
    engineVersion: '3.6.1',
    policy: defaultPlanPolicy,
  });
  const inst = p.instances[0]!;
  t.is(inst.chosen.config.backend_type, 'vulkan');
  t.is(
    inst.reasons[0],
    'int4 on vulkan: not measured, no prior: static order #5 (npu > hexagon > cuda > opencl > vulkan > metal > cpu)',
  );
  t.deepEqual(
    inst.fallback.map((c) => configKey(c.config)),
    ['cpu t4 p:low m:low cpus:any'],
  );
});

test('OTA version and operator variant constraints select what runs; config names the model', (t) => {
  const p = plan(boards.qcs9075, applianceSlots, {
    constraints: { 'vision.vlm': { version: '1.0.0' }, 'voice.llm': { version: '1.0.0' } },
  });
  t.is(p.slots.find((s) => s.slot === 'vision.vlm')!.instanceKey, `qwen2-vl-2b@1.0.0/int4|${cpuGold}`);
  const missing = plan(boards.qcs9075, applianceSlots, {
    constraints: { 'vision.vlm': { version: '9.9.9' } },
  });
  t.deepEqual(missing.slots.find((s) => s.slot === 'vision.vlm')!.reasons, [
    'version 9.9.9 of qwen2-vl-2b is not installed (installed: 1.0.0, 1.1.0)',
  ]);
  // The slots now want different versions, so they no longer share.
  t.is(missing.slots.find((s) => s.slot === 'voice.llm')!.status, 'placed');
});

test('disabled slots and unknown models are reported, not silently dropped', (t) => {
  const p = plan(boards.x86, [
    slot('voice.asr', { model: { id: 'whisper-tiny' } }, 90),
    slot('voice.tts', { model: { id: 'cosyvoice-300m' } }, 70, { enabled: false }),
  ]);
  t.deepEqual(
    p.slots.map((s) => [s.slot, s.status, s.reasons[0]]),
    [
      ['voice.asr', 'unloaded', 'model whisper-tiny is not installed'],
      ['voice.tts', 'disabled', 'disabled in config'],
    ],
  );
});

test('the placement is reproducible: the same inputs in another order give the same result', (t) => {
  const probes = [
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', 'npu t1 p:low m:low cpus:any', 14.2, 410),
    probe(boards.qcs9075, 'qwen2-vl-2b', '1.1.0', 'int4', cpuGold, 9.1, 58),
  ];
  const a = plan(boards.qcs9075, applianceSlots, { probes });
  const b = plan(boards.qcs9075, [...applianceSlots].reverse(), { probes: [...probes].reverse() });
  t.deepEqual(a, b);
  t.is(explainPlacement(a), explainPlacement(b));
  t.regex(
    explainPlacement(a),
    /instance qwen2-vl-2b@1\.1\.0\/int4\|npu t1 p:low m:low cpus:any {2}\(priority 80; voice\.llm, vision\.vlm\)/,
  );
});

test('a pin that restates the chosen config still shares the one instance', (t) => {
  const p = plan(boards.qcs9075, applianceSlots, { constraints: { 'vision.vlm': { precision: 'low' } } });
  const vlm = p.instances.filter((i) => i.key.startsWith('qwen2-vl-2b'));
  t.is(vlm.length, 1);
  t.deepEqual(vlm[0]!.slots, ['voice.llm', 'vision.vlm']);
  t.is(p.budget.plannedBytes, (288 + 1504 + 384) * 1024 * 1024);
});

test('a slot pinned elsewhere does not join an instance that is only in its fallback chain', (t) => {
  const p = plan(boards.qcs9075, applianceSlots, { constraints: { 'vision.vlm': { backend: 'npu' } } });
  const vlm = p.slots.find((s) => s.slot === 'vision.vlm')!;
  const llm = p.slots.find((s) => s.slot === 'voice.llm')!;
  t.is(vlm.instanceKey, 'qwen2-vl-2b@1.1.0/int4|npu t1 p:low m:low cpus:any');
  t.is(llm.instanceKey, `qwen2-vl-2b@1.1.0/int4|${cpuGold}`);
});

test('a software Vulkan device (lavapipe) ranks after the CPU before anything is measured', (t) => {
  const catalogWithVulkan = catalog.map((m) =>
    m.id === 'qwen2.5-0.5b'
      ? { ...m, variants: m.variants.map((v) => ({ ...v, backends: [...v.backends, 'vulkan' as const] })) }
      : m,
  );
  const board: PlanBoard = {
    ...boards.x86,
    backends: [
      { backend: 'cpu', available: true, reason: 'always' },
      { backend: 'vulkan', available: true, reason: 'lavapipe', software: true },
    ],
  };
  const p = plan(board, [slot('voice.llm', { model: { id: 'qwen2.5-0.5b' } }, 80)], {
    catalog: { models: catalogWithVulkan },
  });
  const inst = p.instances[0]!;
  t.is(inst.chosen.config.backend_type, 'cpu');
  t.deepEqual(
    inst.fallback.map((c) => c.config.backend_type),
    ['vulkan'],
  );
  t.is(
    inst.fallback[0]!.summary,
    'not measured, no prior: vulkan here is a software device on the CPU, so it ranks after cpu',
  );
});

test('measured cpu and vulkan: the faster wins and the placement gives both numbers', (t) => {
  const catalogWithVulkan = catalog.map((m) =>
    m.id === 'qwen2.5-0.5b'
      ? { ...m, variants: m.variants.map((v) => ({ ...v, backends: [...v.backends, 'vulkan' as const] })) }
      : m,
  );
  const board: PlanBoard = {
    ...boards.x86,
    backends: [
      { backend: 'cpu', available: true, reason: 'always' },
      { backend: 'vulkan', available: true, reason: 'lavapipe', software: true },
    ],
  };
  const cpu = 'cpu t8 p:low m:low cpus:any';
  const vk = 'vulkan t1 p:low m:low cpus:any';
  const probes = [
    probe(board, 'qwen2.5-0.5b', '1.0.0', 'int4', cpu, 41.5, 300),
    probe(board, 'qwen2.5-0.5b', '1.0.0', 'int4', vk, 6.2, 40),
  ];
  const p = plan(board, [slot('voice.llm', { model: { id: 'qwen2.5-0.5b' } }, 80)], {
    catalog: { models: catalogWithVulkan },
    probes,
  });
  const inst = p.instances[0]!;
  t.is(inst.chosen.config.backend_type, 'cpu', JSON.stringify(inst.reasons));
  t.true(
    inst.reasons.includes(
      'chosen by measurement: cpu 41.5 tok/s decode, 300.0 tok/s prefill vs vulkan 6.2 tok/s decode, 40.0 tok/s prefill',
    ),
    inst.reasons.join('\n'),
  );
});
