import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { CatalogModel, PlanBoard, SlotSpec } from '../../agent/plan/types.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { runtimeActivationPort, runtimeHealthProbe } from '../../agent/runtime/ota-ports.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { ModelStore } from '../../models/index.js';
import { modelFixturesDir } from '../helpers/paths.js';
import { FakeWorld, stopAfterTests } from './runtime-fakes.js';

const MiB = 1024 * 1024;
const board: PlanBoard = {
  boardId: 'ota-test',
  ramBytes: 8192 * MiB,
  cpuClusters: [{ name: 'big', cpus: [0, 1], maxFreqKHz: 2_000_000 }],
  backends: [{ backend: 'cpu', available: true, reason: 'always' }],
  priors: [],
};
const model = (version: string): CatalogModel => ({
  id: 'vlm',
  version,
  kind: 'vlm',
  variants: [
    {
      variantId: 'int4',
      quant: 'int4',
      weightBytes: 10 * MiB,
      kvBytesPerToken: 0,
      backends: ['cpu'],
      configPath: `/m/${version}`,
    },
  ],
});
const slots: SlotSpec[] = [
  {
    slot: 'vision.vlm',
    use: { model: { id: 'vlm', version: '1.0.0' } },
    priority: 50,
    contextTokens: 0,
    enabled: true,
  },
];

function setup() {
  const world = new FakeWorld();
  const runtime = stopAfterTests(
    new Runtime({
      db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
      clock: systemClock,
      log: createMemoryLogger(),
      hosts: world,
      memory: world,
      sources: { board: () => board, catalog: () => ({ models: [model('1.0.0'), model('1.1.0')] }) },
      options: {
        release: { timeoutMs: 100, pollMs: 5, tolerance: 0.1 },
        runnerBackoff: { baseMs: 5_000, maxMs: 5_000 },
      },
    }),
  );
  return { world, runtime };
}

test('OTA activation hot-swaps through the OTA source; the probe runs on what serves; rollback goes back', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  const activation = runtimeActivationPort(runtime);
  const probe = runtimeHealthProbe(runtime);
  const reasons: string[] = [];
  runtime.events.on('placement', (e) => reasons.push(e.reason));
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  await activation.activate('vlm', '1.1.0', 'job-41', '1.0.0');
  t.is(await activation.activeVersion('vlm'), '1.1.0');
  t.is(runtime.document().slots[0]!.sources.version, 'ota');
  // The OTA job's own id, not a constant: the desired state's author and the replan reason name the job.
  t.is(runtime.document().slots[0]!.ota?.author, 'ota:job-41');
  t.deepEqual(reasons, ['OTA job job-41 activates vlm@1.1.0']);
  const r = await probe.measure({
    modelId: 'vlm',
    version: '1.1.0',
    prompt: 'What is this?',
    maxNewTokens: 3,
    image: '/tmp/ref.png',
    timeoutMs: 1000,
  });
  t.is(r.text, '1.1.0:0 1.1.0:1 1.1.0:2 ');
  t.true(r.ttftMs >= 0);
  t.is(r.decodeTokensPerSecond, 1000);
  await t.throwsAsync(
    probe.measure({ modelId: 'vlm', version: '1.0.0', prompt: 'x', maxNewTokens: 1, timeoutMs: 100 }),
    {
      message: 'vlm@1.0.0 is not serving any slot; nothing to probe',
    },
  );
  await activation.rollback('vlm', '1.0.0', 'job-41');
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  t.is(runtime.document().slots[0]!.ota?.author, 'ota:job-41:rollback');
  t.deepEqual(reasons, ['OTA job job-41 activates vlm@1.1.0', 'OTA job job-41 rolls back to vlm@1.0.0']);
  await runtime.stop();
});

test('an activation whose version does not load is reported with the load error, the old one keeps serving', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  const original = world.behaviour;
  world.behaviour = { ...original, loadFails: new Map([['cpu', 'weights file truncated']]) };
  const activation = runtimeActivationPort(runtime);
  await t.throwsAsync(activation.activate('vlm', '1.1.0', 'job-42', '1.0.0'), {
    message: 'activating vlm@1.1.0 did not take effect: load failed: weights file truncated',
  });
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  world.behaviour = original;
  await activation.rollback('vlm', undefined, 'job-42');
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  await runtime.stop();
});

/** The runtime over a real model store, wired the way agent/compose.ts wires them. */
async function setupWithStore(t: ExecutionContext) {
  const dir = mkdtempSync(join(tmpdir(), 'runtime-ota-'));
  const db = openStore(join(dir, 'agent.db'));
  const { store } = ModelStore.open({ dataDir: dir, db });
  const world = new FakeWorld();
  const runtime = stopAfterTests(
    new Runtime({
      db,
      clock: systemClock,
      log: createMemoryLogger(),
      hosts: world,
      memory: world,
      sources: { board: () => board, catalog: () => ({ models: [model('1.0.0'), model('1.1.0')] }) },
      options: {
        release: { timeoutMs: 100, pollMs: 5, tolerance: 0.1 },
        runnerBackoff: { baseMs: 5_000, maxMs: 5_000 },
      },
      inUse: (refs) => store.setInUse(refs),
    }),
  );
  t.teardown(async () => {
    await runtime.stop();
    store.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const tiny = join(modelFixturesDir, 'tiny-llm');
  await store.import(tiny, { id: 'vlm', version: '1.0.0' });
  await store.import(tiny, { id: 'vlm', version: '1.1.0' });
  const activation = runtimeActivationPort(runtime, { rollbackHold: store });
  const flags = (version: string) => {
    const p = store.get({ id: 'vlm', version });
    return p ? { inUse: p.inUse, rollbackHold: p.rollbackHold } : 'removed';
  };
  return { world, runtime, store, activation, flags };
}

test('during the health check the previous version is held for rollback: GC keeps it until the commit', async (t) => {
  const { runtime, store, activation, flags } = await setupWithStore(t);
  await runtime.configure(slots);
  await runtime.settled();
  t.deepEqual(flags('1.0.0'), { inUse: true, rollbackHold: false });

  t.deepEqual(await activation.activate('vlm', '1.1.0', 'job-43', '1.0.0'), { serving: true });
  // The runtime no longer uses 1.0.0, so only the hold keeps it from GC while the gate runs.
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });
  t.deepEqual(store.gc().removed, []);
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });

  await activation.commit('vlm', '1.1.0', '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: false });
  t.deepEqual(store.gc().removed, [{ id: 'vlm', version: '1.0.0' }]);
  t.is(flags('1.0.0'), 'removed');
  t.deepEqual(flags('1.1.0'), { inUse: true, rollbackHold: false });
});

test('a rollback serves the held version again and releases the hold; a failed activation does the same', async (t) => {
  const { world, runtime, store, activation, flags } = await setupWithStore(t);
  await runtime.configure(slots);
  await runtime.settled();
  await activation.activate('vlm', '1.1.0', 'job-44', '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });
  await activation.rollback('vlm', '1.0.0', 'job-44');
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: true, rollbackHold: false });
  t.deepEqual(store.gc().removed, []);

  const original = world.behaviour;
  world.behaviour = { ...original, loadFails: new Map([['cpu', 'weights file truncated']]) };
  await t.throwsAsync(activation.activate('vlm', '1.1.0', 'job-44', '1.0.0'), {
    message: 'activating vlm@1.1.0 did not take effect: load failed: weights file truncated',
  });
  // 1.0.0 still serves, but the placement names only 1.1.0: the hold is what keeps it on disk until the job
  // runner's rollback makes it the desired version again.
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });
  t.deepEqual(store.gc().removed, []);
  world.behaviour = original;
  await activation.rollback('vlm', '1.0.0', 'job-44');
  t.deepEqual(flags('1.0.0'), { inUse: true, rollbackHold: false });
});

test('a hold placed before a restart is released by the commit of the resumed job', async (t) => {
  const { runtime, store, flags } = await setupWithStore(t);
  await runtime.configure(slots);
  await runtime.settled();
  const before = runtimeActivationPort(runtime, { rollbackHold: store });
  await before.activate('vlm', '1.1.0', 'job-45', '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });
  // The agent restarts mid-gate: a fresh port, whose resumed activation finds 1.1.0 already serving.
  const after = runtimeActivationPort(runtime, { rollbackHold: store });
  await after.activate('vlm', '1.1.0', 'job-45', '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: true });
  await after.commit('vlm', '1.1.0', '1.0.0');
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: false });
});

test('activating a model no slot uses selects the version and says it does not serve yet, without failing', async (t) => {
  const { runtime, activation, flags } = await setupWithStore(t);
  await runtime.configure([]);
  await runtime.settled();
  t.deepEqual(await activation.activate('vlm', '1.1.0', 'job-46', undefined), {
    serving: false,
    why: 'no enabled slot uses vlm yet',
  });
  t.is(await activation.activeVersion('vlm'), undefined);
  t.deepEqual(flags('1.0.0'), { inUse: false, rollbackHold: false });
  await activation.commit('vlm', '1.1.0', undefined);

  // The slot configured later serves the version the job selected, not the one its config names.
  await runtime.configure(slots);
  await runtime.settled();
  t.is(await activation.activeVersion('vlm'), '1.1.0');
});

test('a disabled slot does not count as using the model', async (t) => {
  const { runtime, activation } = await setupWithStore(t);
  await runtime.configure([{ ...slots[0]!, enabled: false }]);
  await runtime.settled();
  t.deepEqual(await activation.activate('vlm', '1.1.0', 'job-47', undefined), {
    serving: false,
    why: 'no enabled slot uses vlm yet',
  });
  await activation.rollback('vlm', undefined, 'job-47');
  t.is(runtime.document().slots[0]!.ota, undefined);
});
