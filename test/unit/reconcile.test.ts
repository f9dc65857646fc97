// The pure half of the reconciler: which candidate of each planned instance runs now, given recent failures.
import test from 'ava';
import { planPlacement } from '../../agent/plan/planner.js';
import { defaultPlanPolicy } from '../../agent/plan/types.js';
import { FailureBook } from '../../agent/runtime/desired/failures.js';
import { activeTarget } from '../../agent/runtime/desired/target.js';
import type { CurrentState } from '../../agent/runtime/desired/types.js';
import { planSteps } from '../../agent/runtime/reconciling/steps.js';
import type { Clock } from '../../lib/clock.js';
import { applianceSlots, boards, catalog } from './plan-fixtures.js';

const placement = planPlacement({
  board: boards.qcs9075,
  catalog: { models: catalog },
  slots: applianceSlots,
  constraints: { 'vision.vlm': { backend: 'npu' }, 'voice.llm': { backend: 'npu' } },
  probes: [],
  engineVersion: '3.6.1',
  policy: defaultPlanPolicy,
});
const vlm = placement.instances.find((i) => i.slots.includes('vision.vlm'))!;
const chain = [vlm.chosen, ...vlm.fallback].map((c) => c.config.backend_type);

function book() {
  let now = 1000;
  const clock: Clock = { monotonicMs: () => now, nowMs: () => now };
  return {
    failures: new FailureBook(clock, { baseMs: 30_000, maxMs: 600_000, forgetAfterMs: 3_600_000 }),
    advance: (ms: number) => (now += ms),
  };
}

test('a pin keeps only the pinned backend, with the CPU as its floor', (t) => {
  t.deepEqual(chain, ['npu', 'cpu']);
});

test('no failures: the planner first choice runs, shared by both slots', (t) => {
  const { failures } = book();
  const { target, choices } = activeTarget(placement, failures);
  t.is(target.serving['voice.llm'], vlm.chosen.key);
  t.is(target.serving['vision.vlm'], vlm.chosen.key);
  t.is(target.instances.filter((i) => i.key === vlm.chosen.key).length, 1);
  t.is(choices.find((c) => c.plannedKey === vlm.key)!.fallback, undefined);
});

test('a failed first choice falls to the next candidate, with the reason and when it is retried', (t) => {
  const { failures } = book();
  failures.record(vlm.chosen.key, 'load failed: QNN context binary is for v73, this DSP is v75');
  const { target, choices } = activeTarget(placement, failures);
  const cpu = vlm.fallback[0]!;
  t.is(target.serving['vision.vlm'], cpu.key);
  t.deepEqual(choices.find((c) => c.plannedKey === vlm.key)!.fallback, {
    fromKey: vlm.chosen.key,
    reason: 'load failed: QNN context binary is for v73, this DSP is v75',
    retryAtMs: 31_000,
  });
});

test('after the backoff the preferred candidate is the target again (retry of the preferred)', (t) => {
  const { failures, advance } = book();
  failures.record(vlm.chosen.key, 'backend fault');
  advance(30_000);
  t.is(activeTarget(placement, failures).target.serving['vision.vlm'], vlm.chosen.key);
});

test('when every candidate failed recently the last one (the CPU floor) is still the target', (t) => {
  const { failures } = book();
  for (const c of [vlm.chosen, ...vlm.fallback]) failures.record(c.key, 'failed');
  t.is(activeTarget(placement, failures).target.serving['vision.vlm'], vlm.fallback.at(-1)!.key);
});

test('a fallback while serving becomes a blue/green swap to the CPU candidate', (t) => {
  const { failures } = book();
  const before = activeTarget(placement, failures).target;
  const current: CurrentState = {
    instances: before.instances.map((spec) => ({ spec, status: 'ready' as const })),
    serving: before.serving,
  };
  failures.record(vlm.chosen.key, 'backend fault: QNN graph execute error 1002');
  const after = activeTarget(placement, failures).target;
  const plan = planSteps(current, after, { availableBytes: 32 * 1024 ** 3, reserveBytes: 256 * 1024 ** 2 });
  t.deepEqual(plan.strategies, { [vlm.fallback[0]!.key]: 'blue-green' });
  t.deepEqual(
    plan.steps.map((s) => s.kind),
    ['startHost', 'load', 'warmUp', 'switch', 'drain', 'unload', 'stopHost'],
  );
});
