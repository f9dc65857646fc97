// The planner's call alone: a replan stores a revision, tells the store which versions to keep, wakes parked
// requests and asks for a reconcile; slotInfo explains each slot; an unpinned slot keeps the version it runs.
import test from 'ava';
import { planned, runtimeParts, testSlots, tinyLlm } from './runtime-parts.js';

test('replan: stores the placement as a revision, reports the versions in use, asks for a run', async (t) => {
  const inUse: string[][] = [];
  const parts = runtimeParts({}, [tinyLlm('1'), tinyLlm('2')], {
    inUse: (refs) => inUse.push(refs.map((r) => `${r.id}@${r.version}`)),
  });
  const runs = parts.triggers();
  const placement = await planned(parts);
  t.is(parts.planning.placement(), placement);
  t.is(parts.desired.placement()?.instances[0]?.key, placement.instances[0]?.key);
  t.is(parts.seen('placement')[0]?.revision, parts.desired.revision().revision);
  t.deepEqual(inUse, [['tiny-llm@1']]);
  t.is(parts.triggers(), runs + 1);
  t.like(parts.seen('placement'), [{ reason: 'test' }]);
});

test('slotInfo: placed with model and kind, built-in, disabled with its reason, unconfigured', async (t) => {
  const parts = runtimeParts();
  await planned(parts);
  t.deepEqual(parts.planning.slotInfo('voice.llm'), {
    status: 'placed',
    modelId: 'tiny-llm',
    version: '1',
    kind: 'llm',
  });
  t.deepEqual(parts.planning.slotInfo('voice.vad'), { status: 'builtin', builtin: 'energy-vad' });
  t.like(parts.planning.slotInfo('vision.vlm'), { status: 'disabled' });
  t.deepEqual(parts.planning.slotInfo('voice.tts'), { status: 'unconfigured' });
});

test('an unpinned slot keeps the version it runs when a newer one is installed; the first plan takes the newest', async (t) => {
  const catalog = [tinyLlm('1')];
  const parts = runtimeParts({}, catalog);
  const unpinned = testSlots.map((s) =>
    s.slot === 'voice.llm' ? { ...s, use: { model: { id: 'tiny-llm' } } } : s,
  );
  await planned(parts, unpinned);
  t.like(parts.planning.slotInfo('voice.llm'), { version: '1' });
  catalog.push(tinyLlm('2'));
  await parts.planning.replan('model installed');
  t.like(parts.planning.slotInfo('voice.llm'), { version: '1' });

  const fresh = runtimeParts({}, [tinyLlm('1'), tinyLlm('2')]);
  await planned(fresh, unpinned);
  t.like(fresh.planning.slotInfo('voice.llm'), { version: '2' });
});
