// The reconciler alone, driven by hand instead of by the exclusive runner: one run brings what runs to the
// placement (start, load, warm up, switch; drain and stop what is no longer wanted), a failing candidate is
// recorded and its fallback started in the same run, and a run with nothing to do changes nothing.
import test from 'ava';
import { Failover } from '../../agent/runtime/reconciling/failover.js';
import { Reconciler } from '../../agent/runtime/reconciling/reconciler.js';
import { planned, runtimeParts, testSlots } from './runtime-parts.js';

async function setup() {
  const parts = runtimeParts();
  const placement = await planned(parts);
  const failover = new Failover(parts.core);
  const reconciler = new Reconciler(parts.core, parts.planning, failover);
  const run = () => reconciler.run(new AbortController().signal);
  return { parts, placement, failover, reconciler, run };
}

test('a run starts, loads and warms the planned instance and switches its slot to it; a second run does nothing', async (t) => {
  const { parts, placement, run } = await setup();
  await run();
  const key = placement.instances[0]!.key;
  const inst = parts.core.table.servingInstance('voice.llm');
  t.is(inst?.spec.key, key);
  t.is(inst?.status, 'ready');
  t.deepEqual(
    parts.core.table.transitions.map((tr) => tr.to),
    ['starting', 'loading', 'warming', 'ready'],
  );
  t.is(parts.seen('plan').length, 1);
  await run();
  t.is(parts.seen('plan').length, 1);
  t.is(parts.world.hosts.length, 1);
});

test('a candidate whose load fails is recorded and its fallback serves the slot after the same run', async (t) => {
  const { parts, placement, run } = await setup();
  const preferred = placement.instances[0]!;
  parts.world.behaviour.loadFails.set(preferred.chosen.config.backend_type, 'CL_INVALID_DEVICE');
  await run();
  t.like(parts.seen('step-failed'), [{ step: 'load failed', instanceKey: preferred.key }]);
  t.regex(parts.core.failures.get(preferred.key)?.reason ?? '', /CL_INVALID_DEVICE/);
  const serving = parts.core.table.servingInstance('voice.llm');
  t.is(serving?.spec.key, preferred.fallback[0]?.key);
  t.like(parts.seen('fallback'), [{ fromKey: preferred.key, toKey: preferred.fallback[0]?.key }]);
  t.is(parts.world.live().length, 1, 'the failed host was stopped');
});

test('a new version: the slot switches to the new instance and the old host is drained and stopped', async (t) => {
  const { parts, run } = await setup();
  await run();
  const old = parts.core.table.servingInstance('voice.llm')!;
  parts.desired.replaceConfig(
    testSlots.map((s) =>
      s.slot === 'voice.llm' ? { ...s, use: { model: { id: 'tiny-llm', version: '2' } } } : s,
    ),
  );
  await parts.planning.replan('version 2');
  await run();
  const now = parts.core.table.servingInstance('voice.llm');
  t.is(now?.spec.version, '2');
  t.false(parts.core.table.instances.has(old.spec.key));
  t.false((old.host as { alive?: boolean }).alive);
  t.like(parts.seen('switch').at(-1), { slots: ['voice.llm'] });
});

test('a cancelled run throws its reason and starts nothing', async (t) => {
  const { parts, reconciler } = await setup();
  const controller = new AbortController();
  controller.abort(new Error('runtime stopping'));
  await t.throwsAsync(reconciler.run(controller.signal), { message: 'runtime stopping' });
  t.is(parts.world.hosts.length, 0);
});
