import test from 'ava';
import { CommandRegistry } from '../../agent/fleet/commands.js';
import type { PlanBoard, SlotSpec } from '../../agent/plan/types.js';
import { describeLoadSplit } from '../../agent/runtime/engine/load-split.js';
import { registerRuntimeCommands } from '../../agent/runtime/fleet-commands.js';
import { runtimeSlotStates } from '../../agent/runtime/measuring/slot-states.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { FakeWorld, stopAfterTests } from './runtime-fakes.js';

const MiB = 1024 * 1024;
const board: PlanBoard = {
  boardId: 'fleet-test',
  ramBytes: 8192 * MiB,
  cpuClusters: [{ name: 'big', cpus: [0, 1], maxFreqKHz: 2_000_000 }],
  backends: [{ backend: 'cpu', available: true, reason: 'always' }],
  priors: [],
};
const slots: SlotSpec[] = [
  { slot: 'voice.vad', use: { builtin: 'energy-vad' }, priority: 100, contextTokens: 0, enabled: true },
  { slot: 'voice.llm', use: { model: { id: 'llm' } }, priority: 80, contextTokens: 0, enabled: true },
];

async function setup() {
  const world = new FakeWorld();
  const runtime = stopAfterTests(
    new Runtime({
      db: openStore(':memory:', { migrations: [coreMigration, ...runtimeMigrations] }),
      clock: systemClock,
      log: createMemoryLogger(),
      hosts: world,
      memory: world,
      sources: {
        board: () => board,
        catalog: () => ({
          models: [
            {
              id: 'llm',
              version: '1',
              kind: 'llm',
              variants: [
                {
                  variantId: 'q4',
                  quant: 'int4',
                  weightBytes: MiB,
                  kvBytesPerToken: 0,
                  backends: ['cpu'],
                  configPath: '/m',
                },
              ],
            },
          ],
        }),
      },
    }),
  );
  await runtime.configure(slots);
  await runtime.settled();
  const registry = new CommandRegistry();
  registerRuntimeCommands(registry, runtime);
  const ctx = { deviceId: 'dev-1', logger: createMemoryLogger() };
  return { world, runtime, registry, ctx };
}

test('fleet commands: set-placement pins and clears, get-placement shows why, bad params are refused', async (t) => {
  const { runtime, registry, ctx } = await setup();
  t.deepEqual(
    registry.list().map((c) => c.name),
    ['bench-models', 'get-placement', 'set-placement'],
  );
  const pinned = await registry.dispatch('set-placement', { slot: 'voice.llm', pin: { threads: 1 } }, ctx);
  t.true(pinned.ok);
  t.is(runtime.state().serving['voice.llm'], 'llm@1/q4|cpu t1 p:low m:low cpus:any');
  t.is(runtime.document().slots.find((s) => s.slot === 'voice.llm')!.operator!.author, 'fleet');
  const cleared = await registry.dispatch('set-placement', { slot: 'voice.llm', pin: null }, ctx);
  t.true(cleared.ok);
  t.is(runtime.state().serving['voice.llm'], 'llm@1/q4|cpu t2 p:low m:low cpus:any');
  const got = await registry.dispatch('get-placement', {}, ctx);
  t.true(
    got.ok && /instance llm@1\/q4\|cpu t2 p:low m:low cpus:any/.test((got.result as { text: string }).text),
  );
  t.deepEqual(await registry.dispatch('set-placement', { slot: 'voice.chat' }, ctx), {
    ok: false,
    error: {
      code: 'EPARAMS',
      message:
        'Invalid params for set-placement: slot: expected one of "voice.vad", "voice.wake", "voice.asr", "voice.llm", ' +
        '"voice.tts", "voice.omni", "vision.vlm", got "voice.chat"',
    },
  });
  t.deepEqual(await registry.dispatch('bench-models', { version: '1' }, ctx), {
    ok: false,
    error: { code: 'EHANDLER', message: 'bench-models failed: bench-models: a version needs a modelId' },
  });
  const bench = await registry.dispatch('bench-models', { modelId: 'llm' }, ctx);
  if (!bench.ok) return t.fail(bench.error.message);
  t.is((bench.result as { results: unknown[] }).results.length, 1);
  await runtime.stop();
});

test('slot stats for telemetry: what serves each slot and how its requests went', async (t) => {
  const { world, runtime } = await setup();
  await runtime.serving.generate('voice.llm', { prompt: 'Hi', maxNewTokens: 4 });
  world.behaviour.generateFaults.set('cpu', 'driver fault');
  await t.throwsAsync(runtime.serving.generate('voice.llm', { prompt: 'Hi', maxNewTokens: 1 }));
  const stats = runtime.slotStats();
  t.deepEqual(stats[0], { slot: 'voice.vad', model: 'energy-vad', requests: 0, errors: 0 });
  const llm = stats[1]!;
  t.like(llm, { slot: 'voice.llm', requests: 2, errors: 1, tokensPerSec: 1000 });
  t.true(llm.ttftMs !== undefined && llm.ttftMs >= 0);
  await runtime.stop();
});

test('slot stats and slot states say where the serving instance started: host, read, MNN load, warm-up', async (t) => {
  const { runtime } = await setup();
  const llm = runtime.slotStats().find((s) => s.slot === 'voice.llm')!;
  // The engine's own split comes through as it reported it; the runtime times the steps around it.
  t.like(llm.loadSplit, { readMs: 1, readBytes: 100 * 1048576, mnnLoadMs: 3 });
  for (const step of ['hostStartMs', 'loadMs', 'warmUpMs'] as const)
    t.true(typeof llm.loadSplit?.[step] === 'number' && llm.loadSplit[step] >= 0, step);
  // The load step waited for the fake engine's 5 ms at least, so it is never shorter than its parts.
  t.true(llm.loadSplit!.loadMs! >= llm.loadSplit!.readMs! + llm.loadSplit!.mnnLoadMs!);
  const state = runtimeSlotStates(runtime).find((s) => s.slot === 'voice.llm')!;
  t.deepEqual(state.loadSplit, llm.loadSplit);
  t.regex(
    describeLoadSplit(llm.loadSplit)!,
    /^\d+ ms: host \d+ ms, read 1 ms \(100 MiB\), MNN load 3 ms, warm-up \d+ ms$/,
  );
  await runtime.stop();
});
