import test from 'ava';
import type { CurrentState, MemoryView, TargetState } from '../../agent/runtime/desired/types.js';
import type { InstanceSpec } from '../../agent/runtime/engine/engine-port.js';
import { describeStep, planSteps } from '../../agent/runtime/reconciling/steps.js';

const MiB = 1024 * 1024;

function spec(key: string, memoryMiB: number): InstanceSpec {
  return {
    key,
    modelId: key.split('@')[0]!,
    version: '1',
    variantId: 'int4',
    configPath: `/m/${key}/config.json`,
    config: { backend_type: 'cpu', thread_num: 4, precision: 'low', memory: 'low', cpus: [] },
    memoryBytes: memoryMiB * MiB,
  };
}

const vlmA = spec('vlm@1', 1500);
const vlmB = spec('vlm@2', 1500);
const asr = spec('asr@1', 300);
const plenty: MemoryView = { availableBytes: 8000 * MiB, reserveBytes: 256 * MiB };
const tight: MemoryView = { availableBytes: 1600 * MiB, reserveBytes: 256 * MiB };

function lines(current: CurrentState, target: TargetState, memory: MemoryView): string[] {
  return planSteps(current, target, memory).steps.map(describeStep);
}

const servingA: CurrentState = {
  instances: [
    { spec: vlmA, status: 'ready', pid: 100, rssBytes: 1400 * MiB },
    { spec: asr, status: 'ready', pid: 101 },
  ],
  serving: { 'voice.llm': 'vlm@1', 'vision.vlm': 'vlm@1', 'voice.asr': 'asr@1' },
};

test('cold start: each instance starts, loads, warms up, then its slots switch to it', (t) => {
  const target: TargetState = {
    instances: [vlmA, asr],
    serving: { 'voice.llm': 'vlm@1', 'vision.vlm': 'vlm@1', 'voice.asr': 'asr@1' },
  };
  t.deepEqual(lines({ instances: [], serving: {} }, target, plenty), [
    'start host for vlm@1',
    'load vlm@1',
    'warmUp vlm@1',
    'switch voice.llm, vision.vlm → vlm@1',
    'start host for asr@1',
    'load asr@1',
    'warmUp asr@1',
    'switch voice.asr → asr@1',
  ]);
});

test('nothing to do when current is the target', (t) => {
  const target: TargetState = { instances: [vlmA, asr], serving: servingA.serving };
  t.deepEqual(planSteps(servingA, target, plenty), { steps: [], notes: [], strategies: {} });
});

test('swap with room for both: blue/green, the shared instance switches both slots at once', (t) => {
  const target: TargetState = {
    instances: [vlmB, asr],
    serving: { 'voice.llm': 'vlm@2', 'vision.vlm': 'vlm@2', 'voice.asr': 'asr@1' },
  };
  const plan = planSteps(servingA, target, plenty);
  t.deepEqual(plan.steps.map(describeStep), [
    'start host for vlm@2',
    'load vlm@2',
    'warmUp vlm@2',
    'switch voice.llm, vision.vlm → vlm@2',
    'drain vlm@1',
    'unload vlm@1',
    'stopHost vlm@1',
  ]);
  t.deepEqual(plan.strategies, { 'vlm@2': 'blue-green' });
  t.deepEqual(plan.notes, []);
});

test('swap without room for both: stop-then-load, and the plan says why', (t) => {
  const target: TargetState = {
    instances: [vlmB, asr],
    serving: { 'voice.llm': 'vlm@2', 'vision.vlm': 'vlm@2', 'voice.asr': 'asr@1' },
  };
  const plan = planSteps(servingA, target, tight);
  t.deepEqual(plan.steps.map(describeStep), [
    'switch voice.llm, vision.vlm → (unserved)',
    'drain vlm@1',
    'unload vlm@1',
    'stopHost vlm@1',
    'start host for vlm@2',
    'load vlm@2',
    'warmUp vlm@2',
    'switch voice.llm, vision.vlm → vlm@2',
  ]);
  t.deepEqual(plan.strategies, { 'vlm@2': 'stop-then-load' });
  t.deepEqual(plan.notes, [
    'vlm@2: stop-then-load: it needs 1500 MiB but only 1344 MiB is available above the 256 MiB reserve ' +
      'while vlm@1 is loaded; voice.llm, vision.vlm wait unserved during the swap',
  ]);
});

test('fallback after a host crash: the failed host is reaped and the next candidate loads', (t) => {
  const crashed: CurrentState = {
    instances: [
      { spec: vlmA, status: 'failed', pid: 100 },
      { spec: asr, status: 'ready', pid: 101 },
    ],
    serving: { 'voice.llm': 'vlm@1', 'vision.vlm': 'vlm@1', 'voice.asr': 'asr@1' },
  };
  const cpuFallback = spec('vlm@1-cpu', 1500);
  const target: TargetState = {
    instances: [cpuFallback, asr],
    serving: { 'voice.llm': 'vlm@1-cpu', 'vision.vlm': 'vlm@1-cpu', 'voice.asr': 'asr@1' },
  };
  t.deepEqual(lines(crashed, target, tight), [
    'switch voice.llm, vision.vlm → (unserved)',
    'stopHost vlm@1',
    'start host for vlm@1-cpu',
    'load vlm@1-cpu',
    'warmUp vlm@1-cpu',
    'switch voice.llm, vision.vlm → vlm@1-cpu',
  ]);
});

test('restart of the same instance after a crash (the CPU floor): reap, then load it again', (t) => {
  const crashed: CurrentState = {
    instances: [{ spec: asr, status: 'failed', pid: 101 }],
    serving: {},
  };
  const target: TargetState = { instances: [asr], serving: { 'voice.asr': 'asr@1' } };
  t.deepEqual(lines(crashed, target, plenty), [
    'stopHost asr@1',
    'start host for asr@1',
    'load asr@1',
    'warmUp asr@1',
    'switch voice.asr → asr@1',
  ]);
});

test('degrade: a slot the target no longer serves is unserved and its instance stopped first', (t) => {
  const target: TargetState = { instances: [asr], serving: { 'voice.asr': 'asr@1' } };
  t.deepEqual(lines(servingA, target, tight), [
    'switch voice.llm, vision.vlm → (unserved)',
    'drain vlm@1',
    'unload vlm@1',
    'stopHost vlm@1',
  ]);
});

test('un-sharing: one slot moves to a new instance, the old one keeps serving the other', (t) => {
  const target: TargetState = {
    instances: [vlmA, vlmB, asr],
    serving: { 'voice.llm': 'vlm@2', 'vision.vlm': 'vlm@1', 'voice.asr': 'asr@1' },
  };
  t.deepEqual(lines(servingA, target, plenty), [
    'start host for vlm@2',
    'load vlm@2',
    'warmUp vlm@2',
    'switch voice.llm → vlm@2',
  ]);
});

test('memory freed by retiring unneeded instances counts before choosing the swap strategy', (t) => {
  const current: CurrentState = {
    instances: [
      { spec: vlmA, status: 'ready', pid: 100 },
      { spec: asr, status: 'ready', pid: 101, rssBytes: 400 * MiB },
    ],
    serving: { 'voice.llm': 'vlm@1', 'voice.asr': 'asr@1' },
  };
  const target: TargetState = { instances: [vlmB], serving: { 'voice.llm': 'vlm@2' } };
  // 1344 MiB free + 400 MiB from asr (its RSS, larger than the estimate) leaves room for blue/green.
  const plan = planSteps(current, target, tight);
  t.deepEqual(plan.strategies, { 'vlm@2': 'blue-green' });
  t.deepEqual(plan.steps.map(describeStep).slice(0, 4), [
    'switch voice.asr → (unserved)',
    'drain asr@1',
    'unload asr@1',
    'stopHost asr@1',
  ]);
});
