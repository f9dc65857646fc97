// Measurement alone: every candidate probed one at a time under the exclusive lock, the numbers stored for the
// planner, one replan after; a candidate that does not fit in memory now is skipped, not recorded as failed.
import test from 'ava';
import type { Placement } from '../../agent/plan/types.js';
import { Measurement } from '../../agent/runtime/measuring/measurement.js';
import { MiB, runtimeParts, tinyLlm } from './runtime-parts.js';

function setup() {
  const parts = runtimeParts({}, [tinyLlm('1', ['cpu'])]);
  const replans: string[] = [];
  let exclusive = 0;
  const stopping = new AbortController();
  const measurement = new Measurement(parts.core, {
    planning: parts.planning,
    probes: parts.probes,
    exclusive: async (fn) => {
      exclusive++;
      return fn();
    },
    replan: async (reason) => {
      replans.push(reason);
      return {} as Placement;
    },
    stopping: stopping.signal,
  });
  return { parts, measurement, replans, exclusive: () => exclusive, stopping };
}

test('probeModels: each candidate probed under the lock, stored per board, then one replan', async (t) => {
  const { parts, measurement, replans, exclusive } = setup();
  const seen: string[] = [];
  const results = await measurement.probeModels(
    { modelId: 'tiny-llm' },
    { onResult: (r) => seen.push(r.variantId) },
  );
  t.true(results.length > 0);
  t.true(results.every((r) => r.ok && r.boardId === 'test-board' && r.modelId === 'tiny-llm'));
  t.is(exclusive(), results.length);
  t.deepEqual(
    seen,
    results.map((r) => r.variantId),
  );
  t.is(parts.probes.forBoard('test-board', parts.world.engineVersion).length, results.length);
  t.deepEqual(replans, [`${results.length} probe result(s) stored`]);
  t.true(
    parts.world.hosts.every((h) => !h.alive),
    'every probe host was stopped',
  );
  // A probe measures the model alone: no conversation contexts made at its load.
  t.true(parts.world.hosts.every((h) => h.spec !== undefined && h.spec.conversations === undefined));
});

test('probeModels: a candidate that does not fit above the reserve is skipped with the reason, no replan', async (t) => {
  const { parts, measurement, replans } = setup();
  parts.world.memAvailable = 300 * MiB;
  const skipped: string[] = [];
  const results = await measurement.probeModels({}, { onSkip: (_key, reason) => skipped.push(reason) });
  t.deepEqual(results, []);
  t.true(skipped.length > 0);
  t.regex(skipped[0]!, /needs \d+ bytes, \d+ available above the reserve/);
  t.deepEqual(replans, []);
  t.is(parts.world.hosts.length, 0);
});

test('probeModels: the runtime stopping aborts the probes', async (t) => {
  const { measurement, stopping } = setup();
  stopping.abort(new Error('runtime stopping'));
  await t.throwsAsync(measurement.probeModels(), { message: 'runtime stopping' });
});

test('probeInBackground: a failure is logged, not thrown; settled() waits for it', async (t) => {
  const { parts, measurement } = setup();
  parts.core.deps.sources.catalog = () => {
    throw new Error('catalog unreadable');
  };
  measurement.probeInBackground({ modelId: 'tiny-llm' });
  await measurement.settled();
  t.true(
    parts.log.lines.some((l) => l.includes('background probe failed') && l.includes('catalog unreadable')),
  );
});
