// The instance table alone: which instance serves each slot, the transitions it records and announces, and the
// requests parked until a slot is served.
import test from 'ava';
import { planned, runtimeParts, serveInstance } from './runtime-parts.js';

test('serving: a slot resolves to its instance; unserve takes every slot of that instance away', async (t) => {
  const parts = runtimeParts();
  const inst = await serveInstance(parts, await planned(parts));
  const { table } = parts.core;
  t.is(table.servingInstance('voice.llm'), inst);
  t.deepEqual(table.slotsOf(inst.spec.key), ['voice.llm']);
  table.unserve(inst.spec.key);
  t.is(table.servingInstance('voice.llm'), undefined);
  t.deepEqual(table.slotsOf(inst.spec.key), []);
  t.deepEqual(table.current().serving, {});
  t.is(table.current().instances[0]?.spec.key, inst.spec.key);
});

test('setStatus records one transition per change, with its reason, and emits it; the same status is none', async (t) => {
  const parts = runtimeParts();
  const inst = await serveInstance(parts, await planned(parts));
  const { table } = parts.core;
  table.setStatus(inst, 'draining', 'a newer version');
  table.setStatus(inst, 'draining', 'again');
  t.is(table.transitions.length, 1);
  t.like(table.transitions[0], {
    instanceKey: inst.spec.key,
    from: 'ready',
    to: 'draining',
    reason: 'a newer version',
  });
  t.deepEqual(parts.seen('transition'), table.transitions);
  t.like(table.states()[0], { key: inst.spec.key, status: 'draining', slots: ['voice.llm'], inflight: 0 });
});

test('transitions: only the last 200 are kept', async (t) => {
  const parts = runtimeParts();
  const inst = await serveInstance(parts, await planned(parts));
  for (let i = 0; i < 250; i++) parts.core.table.transition(inst, 'ready', 'ready', `tick ${i}`);
  t.is(parts.core.table.transitions.length, 200);
  t.is(parts.core.table.transitions[0]?.reason, 'tick 50');
});

test('waitServing: a wake releases every waiter, the timeout releases it too, an abort rejects with its reason', async (t) => {
  const { core } = runtimeParts();
  const woken = core.table.waitServing(60_000);
  const alsoWoken = core.table.waitServing(60_000);
  core.table.wakeServingWaiters();
  await Promise.all([woken, alsoWoken]);
  await core.table.waitServing(5);
  const controller = new AbortController();
  const aborted = core.table.waitServing(60_000, controller.signal);
  controller.abort(new Error('client gone'));
  await t.throwsAsync(aborted, { message: 'client gone' });
  t.pass();
});
