import test from 'ava';
import { systemClock } from '../../agent/common/clock.js';
import { createMemoryLogger } from '../../agent/common/log.js';
import type { CatalogModel, PlanBoard, SlotSpec } from '../../agent/plan/types.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { runtimeActivationPort, runtimeHealthProbe } from '../../agent/runtime/ota-ports.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { openStore } from '../../agent/store/database.js';
import { coreMigration } from '../../agent/store/migrations/001-core.js';
import { FakeWorld } from './runtime-fakes.js';

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
  const runtime = new Runtime({
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
  });
  return { world, runtime };
}

test('OTA activation hot-swaps through the OTA layer; the probe runs on what serves; rollback goes back', async (t) => {
  const { runtime } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  const activation = runtimeActivationPort(runtime, 'ota:job-42');
  const probe = runtimeHealthProbe(runtime);
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  await activation.activate('vlm', '1.1.0');
  t.is(await activation.activeVersion('vlm'), '1.1.0');
  t.is(runtime.document().slots[0]!.sources.version, 'ota');
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
  await activation.rollback('vlm', '1.0.0');
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  await runtime.stop();
});

test('an activation whose version does not load is reported with the load error, the old one keeps serving', async (t) => {
  const { world, runtime } = setup();
  await runtime.configure(slots);
  await runtime.settled();
  const original = world.behaviour;
  world.behaviour = { ...original, loadFails: new Map([['cpu', 'weights file truncated']]) };
  const activation = runtimeActivationPort(runtime);
  await t.throwsAsync(activation.activate('vlm', '1.1.0'), {
    message: 'activating vlm@1.1.0 did not take effect: load failed: weights file truncated',
  });
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  world.behaviour = original;
  await activation.rollback('vlm', undefined);
  t.is(await activation.activeVersion('vlm'), '1.0.0');
  await runtime.stop();
});
