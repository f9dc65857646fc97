import test from 'ava';
import { systemClock } from '../../agent/common/clock.js';
import { HttpError } from '../../agent/common/http-error.js';
import { createMemoryLogger } from '../../agent/common/log.js';
import { TypedEventEmitter } from '../../agent/common/typed-events.js';
import { parseConfig } from '../../agent/config/load.js';
import { HttpRouter, type RequestContext } from '../../agent/http/router.js';
import type { AgentContext } from '../../agent/module.js';
import type { PlanBoard } from '../../agent/plan/types.js';
import { createRuntimeModule, unavailableHosts } from '../../agent/runtime/module.js';
import { KvStore, openStore } from '../../agent/store/database.js';
import { FakeWorld } from './runtime-fakes.js';

const MiB = 1024 * 1024;

const board: PlanBoard = {
  boardId: 'module-test',
  ramBytes: 4096 * MiB,
  cpuClusters: [{ name: 'a55', cpus: [0, 1, 2, 3], maxFreqKHz: 1_800_000 }],
  backends: [{ backend: 'cpu', available: true, reason: 'always' }],
  priors: [],
};

const catalog = {
  models: [
    {
      id: 'tiny-llm',
      version: '1',
      kind: 'llm' as const,
      variants: [
        {
          variantId: 'fp32',
          quant: 'fp32',
          weightBytes: 1 * MiB,
          kvBytesPerToken: 0,
          backends: ['cpu' as const],
          configPath: '/m/c.json',
        },
      ],
    },
  ],
};

function context(raw: Record<string, unknown>): AgentContext {
  const db = openStore(':memory:');
  return {
    config: parseConfig(raw, 'test'),
    logger: createMemoryLogger(),
    db,
    kv: new KvStore(db),
    router: new HttpRouter(),
    events: undefined as never,
    identity: undefined as never,
    time: undefined as never,
    clock: systemClock,
  };
}

async function call(router: HttpRouter, method: string, path: string, body?: unknown) {
  const { found } = router.match(method, path);
  if (!found) throw new Error(`no route ${method} ${path}`);
  let sent: { status: number; body: unknown } | undefined;
  await found.entry.handler({
    params: found.params,
    readJson: async () => body,
    json: (status: number, b: unknown) => {
      sent = { status, body: b };
    },
  } as unknown as RequestContext);
  return sent!;
}

test('the module plans from the config slots, serves them, and exposes state and pins over HTTP', async (t) => {
  const world = new FakeWorld();
  const ctx = context({
    slots: { 'voice.vad': { builtin: 'energy-vad' }, 'voice.llm': { model: 'tiny-llm' } },
    runtime: { swapReserveMiB: 64 },
  });
  const inUse: string[][] = [];
  const mod = createRuntimeModule({
    board: () => board,
    catalog: () => catalog,
    hosts: world,
    memory: world,
    inUse: (refs) => inUse.push(refs.map((r) => `${r.id}@${r.version}`)),
  });
  await mod.start(ctx);
  const runtime = mod.runtime()!;
  await runtime.settled();
  t.is((await runtime.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 1 })).text, '1:0 ');
  t.deepEqual(inUse.at(-1), ['tiny-llm@1']);

  const state = await call(ctx.router, 'GET', '/api/runtime');
  t.is(state.status, 200);
  const s = state.body as { state: { serving: Record<string, string> } };
  t.deepEqual(s.state.serving, { 'voice.llm': 'tiny-llm@1/fp32|cpu t4 p:low m:low cpus:any' });

  const placed = await call(ctx.router, 'GET', '/api/runtime/placement');
  t.regex((placed.body as { text: string }).text, /^board module-test, engine 3\.6\.1-test/);

  const pinned = await call(ctx.router, 'PUT', '/api/runtime/pins/voice.llm', { threads: 2 });
  t.is(pinned.status, 200);
  await runtime.settled();
  t.is(runtime.state().serving['voice.llm'], 'tiny-llm@1/fp32|cpu t2 p:low m:low cpus:any');
  t.is(runtime.document().slots.find((x) => x.slot === 'voice.llm')!.operator!.author, 'dashboard');

  const bad = call(ctx.router, 'PUT', '/api/runtime/pins/voice.llm', { threads: 0 });
  const err = await t.throwsAsync(bad, { instanceOf: HttpError });
  t.is(err?.message, 'Invalid pin for voice.llm: threads: expected a number >= 1, got 0');
  t.is((err as HttpError).status, 400);
  const unknown = await t.throwsAsync(
    call(ctx.router, 'PUT', '/api/runtime/pins/voice.llm', { backend: 'tpu' }),
    { instanceOf: HttpError },
  );
  t.is((unknown as HttpError).status, 400);
  t.regex(unknown!.message, /^Unknown backend_type "tpu" in the pin for voice\.llm: this board allows cpu/);

  await call(ctx.router, 'DELETE', '/api/runtime/pins/voice.llm');
  await runtime.settled();
  t.is(runtime.state().serving['voice.llm'], 'tiny-llm@1/fp32|cpu t4 p:low m:low cpus:any');

  await mod.stop!();
  t.is(world.live().length, 0);
  t.is(ctx.router.match('GET', '/api/runtime').found, undefined);
});

test('without MNN every slot reports the loader reason instead of serving', async (t) => {
  const ctx = context({ slots: { 'voice.llm': { model: 'tiny-llm' } } });
  const mod = createRuntimeModule({
    board: () => board,
    catalog: () => catalog,
    hosts: unavailableHosts('MNN not found: set MNN_ROOT=/path/to/mnn'),
  });
  await mod.start(ctx);
  const runtime = mod.runtime()!;
  await runtime.settled();
  await t.throwsAsync(runtime.acquire('voice.llm', { timeoutMs: 50 }), {
    message:
      'slot voice.llm was not served within 50 ms (last reconcile error: tiny-llm@1/fp32|cpu t4 p:low m:low ' +
      'cpus:any: engine host did not start: MNN not found: set MNN_ROOT=/path/to/mnn)',
  });
  await mod.stop!();
});

test('an installed model is probed in the background but not switched to until activated', async (t) => {
  const world = new FakeWorld();
  const installs = new TypedEventEmitter<{ installed: { id: string; version: string } }>();
  const models = [...catalog.models];
  const ctx = context({ slots: { 'voice.llm': { model: 'tiny-llm' } } });
  const mod = createRuntimeModule({
    board: () => board,
    catalog: () => ({ models }),
    hosts: world,
    memory: world,
    installs,
  });
  await mod.start(ctx);
  const runtime = mod.runtime()!;
  await runtime.settled();
  const replanned = new Promise<string>((resolve) =>
    runtime.events.once('placement', (p) => resolve(p.reason)),
  );
  models.push({ ...catalog.models[0]!, version: '2' });
  installs.emit('installed', { id: 'tiny-llm', version: '2' });
  t.is(await replanned, 'model tiny-llm@2 installed');
  const probed = new Promise<string>((resolve) =>
    runtime.events.on('placement', (p) => {
      if (p.reason === '1 probe result(s) stored') resolve(p.reason);
    }),
  );
  await probed;
  t.deepEqual(
    runtime.probes
      .forBoard('module-test', world.engineVersion)
      .map((p) => `${p.modelId}@${p.version} ${p.ok}`),
    ['tiny-llm@2 true'],
  );
  await runtime.settled();
  // Installing is not activating: the slot stays on the version it runs until OTA or an operator moves it.
  t.is(runtime.state().serving['voice.llm'], 'tiny-llm@1/fp32|cpu t4 p:low m:low cpus:any');
  await runtime.setModelVersion('tiny-llm', '2', 'job-1');
  await runtime.settled();
  t.is(runtime.state().serving['voice.llm'], 'tiny-llm@2/fp32|cpu t4 p:low m:low cpus:any');
  await mod.stop!();
});
