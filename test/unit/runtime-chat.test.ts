import test from 'ava';
import type { PlanBoard, SlotSpec } from '../../agent/plan/types.js';
import { runtimeMigrations } from '../../agent/runtime/migrations.js';
import { Runtime } from '../../agent/runtime/runtime.js';
import { coreMigration } from '../../agent/store/core-migration.js';
import { openStore } from '../../agent/store/database.js';
import { runtimeChatModel } from '../../agent/workloads/slots/runtime-chat-model.js';
import { systemClock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { until } from '../helpers/until.js';
import { FakeWorld, stopAfterTests } from './runtime-fakes.js';

const MiB = 1024 * 1024;
const board: PlanBoard = {
  boardId: 'chat-test',
  ramBytes: 8192 * MiB,
  cpuClusters: [],
  backends: [{ backend: 'cpu', available: true, reason: 'always' }],
  priors: [],
};
const slots: SlotSpec[] = [
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
              version: '3',
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
  return { world, runtime };
}

test('the workloads ChatModel port over a slot: pieces stream, the result has the engine numbers', async (t) => {
  const { runtime } = await setup();
  const model = runtimeChatModel(runtime.serving, 'voice.llm', {
    id: 'llm@3',
    capabilities: { vision: false, audio: false, talker: false },
  });
  t.is(model.id, 'llm@3');
  const stream = model.generate({ messages: [{ role: 'user', content: 'Hi' }], maxNewTokens: 2 });
  const pieces: string[] = [];
  for await (const p of stream) pieces.push(p);
  t.deepEqual(pieces, ['3:0 ', '3:1 ']);
  t.deepEqual(await stream.result, {
    text: '3:0 3:1 ',
    finishReason: 'length',
    promptTokens: 3,
    generatedTokens: 2,
    prefillMs: 1,
    decodeMs: 2,
    // What the host did with the KV it held (here: the warm-up's prompt, which this one does not extend).
    reuse: { outcome: 'miss', reason: 'diverged', reusedTokens: 0, prefilledTokens: 32 },
  });
  await runtime.stop();
});

test('the caller aborting ends the stream as aborted; a host crash mid-answer ends it as backend-lost', async (t) => {
  const { world, runtime } = await setup();
  world.behaviour.tokenDelayMs = 10;
  const model = runtimeChatModel(runtime.serving, 'voice.llm', {
    capabilities: { vision: false, audio: false, talker: false },
  });
  const abort = new AbortController();
  const stream = model.generate({
    messages: [{ role: 'user', content: 'Hi' }],
    maxNewTokens: 50,
    signal: abort.signal,
  });
  let n = 0;
  for await (const _ of stream) if (++n === 2) abort.abort();
  t.is((await stream.result).finishReason, 'aborted');
  t.is((await stream.result).text, '3:0 3:1 ');

  const crash = model.generate({ messages: [{ role: 'user', content: 'Hi' }], maxNewTokens: 50 });
  const consume = (async () => {
    for await (const _ of crash) {
      // pieces until the host dies
    }
  })();
  const victim = world.live()[0]!;
  const sentBefore = victim.tokensSent;
  await until(() => victim.tokensSent > sentBefore + 1, 'two tokens of this answer');
  victim.kill();
  // Tokens were already streamed: the answer ends there with its own reason instead of an error, and the
  // session can go on (the runtime falls back underneath).
  await consume;
  const cut = await crash.result;
  t.is(cut.finishReason, 'backend-lost');
  t.true(cut.text.length > 0);
  await runtime.stop();
});
