import test from 'ava';
import { parseConfig } from '../../agent/config/load.js';
import { HttpRouter, type RequestContext } from '../../agent/http/router.js';
import type { AgentContext } from '../../agent/module.js';
import type { PlanBoard } from '../../agent/plan/types.js';
import { createRuntimeModule, unavailableHosts } from '../../agent/runtime/module.js';
import { placementPortFrom } from '../../agent/runtime/placement-port.js';
import { registerPlacementRoutes } from '../../agent/runtime/routes.js';
import { KvStore, openStore } from '../../agent/store/database.js';
import { systemClock } from '../../lib/clock.js';
import { HttpError } from '../../lib/http-error.js';
import { createMemoryLogger } from '../../lib/log.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
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
    auth: { method: 'bearer' },
    req: { socket: { remoteAddress: '127.0.0.1' } },
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
  t.is((await runtime.serving.generate('voice.llm', { prompt: 'Hello', maxNewTokens: 1 })).text, '1:0 ');
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
  t.deepEqual(pinned.body, { ok: true, slot: 'voice.llm', pinned: { threads: 2 } });
  t.is(
    runtime.document().slots.find((x) => x.slot === 'voice.llm')!.operator!.author,
    'dashboard (bearer from 127.0.0.1)',
  );

  const bad = call(ctx.router, 'PUT', '/api/runtime/pins/voice.llm', { threads: 0 });
  const err = await t.throwsAsync(bad, { instanceOf: HttpError });
  t.is(err?.message, 'threads must be an integer from 1 to 64');
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
  await t.throwsAsync(runtime.serving.acquire('voice.llm', { timeoutMs: 50 }), {
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
  // The dashboard's view names the job that selected the version.
  t.deepEqual(placementPortFrom(runtime).view().otaVersions, {
    'voice.llm': { version: '2', setBy: 'OTA job job-1' },
  });
  await runtime.setModelVersion('tiny-llm', '1', 'job-1', 'rollback');
  t.deepEqual(placementPortFrom(runtime).view().otaVersions, {
    'voice.llm': { version: '1', setBy: 'OTA job job-1, rolling back' },
  });
  await mod.stop!();
});

test('one pin API: /api/runtime/pins/:slot and /api/placement/:slot/pin check a bad body the same way, and change nothing', async (t) => {
  const world = new FakeWorld();
  const ctx = context({ slots: { 'voice.llm': { model: 'tiny-llm' } }, runtime: { swapReserveMiB: 64 } });
  const mod = createRuntimeModule({
    board: () => board,
    catalog: () => catalog,
    hosts: world,
    memory: world,
  });
  await mod.start(ctx);
  const runtime = mod.runtime()!;
  await runtime.settled();
  // The dashboard's route over the same runtime, as the dashboard module registers it.
  registerPlacementRoutes(ctx.router, placementPortFrom(runtime), () => ({}));
  const revision = runtime.document().revision;
  const refusals: Array<[unknown, number, string]> = [
    [null, 400, 'Expected a JSON object with any of: version, variant, backend, threads, precision, memory'],
    [
      [{ threads: 2 }],
      400,
      'Expected a JSON object with any of: version, variant, backend, threads, precision, memory',
    ],
    [
      'threads=2',
      400,
      'Expected a JSON object with any of: version, variant, backend, threads, precision, memory',
    ],
    [{}, 400, 'A pin needs at least one field: version, variant, backend, threads, precision, memory'],
    [
      { colour: 'red' },
      400,
      'Unknown pin field "colour"; allowed: version, variant, backend, threads, precision, memory',
    ],
    [{ threads: '2' }, 400, 'threads must be an integer from 1 to 64'],
    [{ threads: 2.5 }, 400, 'threads must be an integer from 1 to 64'],
    [{ precision: 'max' }, 400, 'precision must be one of low, normal, high'],
    [{ version: '../../etc' }, 400, 'version must be 1-64 characters of A-Z a-z 0-9 _ . + -'],
    [{ backend: 42 }, 400, 'backend must be a backend name (cpu, opencl, vulkan, cuda, metal, npu, hexagon)'],
  ];
  for (const [path, other] of [
    ['/api/runtime/pins/voice.llm', '/api/runtime/pins/voice.bogus'],
    ['/api/placement/voice.llm/pin', '/api/placement/voice.bogus/pin'],
  ] as const) {
    for (const [body, status, message] of refusals) {
      const err = await t.throwsAsync(call(ctx.router, 'PUT', path, body), { instanceOf: HttpError });
      t.is((err as HttpError).status, status, JSON.stringify(body));
      t.is(err?.message, message, JSON.stringify(body));
    }
    const unknownSlot = await t.throwsAsync(call(ctx.router, 'PUT', other, { threads: 2 }), {
      instanceOf: HttpError,
    });
    t.is((unknownSlot as HttpError).status, 404);
    t.is(unknownSlot?.message, 'No slot named "voice.bogus"');
    // A backend this board does not know: the runtime names the ones it allows.
    const unknownBackend = await t.throwsAsync(call(ctx.router, 'PUT', path, { backend: 'tpu' }), {
      instanceOf: HttpError,
    });
    t.is((unknownBackend as HttpError).status, 400);
    t.regex(
      unknownBackend!.message,
      /^Unknown backend_type "tpu" in the pin for voice\.llm: this board allows cpu/,
    );
  }
  t.is(runtime.document().revision, revision, 'a refused pin changes nothing');
  const ok = await call(ctx.router, 'PUT', '/api/placement/voice.llm/pin', { threads: 2 });
  t.deepEqual(ok.body, { ok: true, slot: 'voice.llm', pinned: { threads: 2 } });
  t.true(runtime.document().revision > revision, 'an accepted pin is written');
  await mod.stop!();
});
