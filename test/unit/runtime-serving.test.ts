// Serving alone: leases on what serves a slot (built-in, engine, or a clear refusal), the bounded wait while a
// slot is being loaded, generation on the leased host and the per-slot counters.
import test from 'ava';
import { Failover } from '../../agent/runtime/reconciling/failover.js';
import { Serving } from '../../agent/runtime/serving/serving.js';
import { planned, runtimeParts, serveInstance } from './runtime-parts.js';

async function setup(options = {}) {
  const parts = runtimeParts(options);
  const placement = await planned(parts);
  const serving = new Serving(
    parts.core,
    {
      placement: () => parts.planning.placement(),
      wake: (slot) => parts.planning.wake(slot, 'a request came'),
    },
    new Failover(parts.core),
  );
  return { parts, placement, serving };
}

test('acquire: a built-in slot gets a built-in lease; an engine slot a lease on its ready instance', async (t) => {
  const { parts, placement, serving } = await setup();
  t.like(await serving.acquire('voice.vad'), { kind: 'builtin', builtin: 'energy-vad' });
  const inst = await serveInstance(parts, placement);
  const lease = await serving.acquire('voice.llm');
  t.like(lease, { kind: 'engine', slot: 'voice.llm', instanceKey: inst.spec.key });
  t.is(inst.inflight, 1);
  lease.release();
  t.is(inst.inflight, 0);
});

test('acquire: a disabled or unconfigured slot is refused at once, saying why', async (t) => {
  const { serving } = await setup();
  await t.throwsAsync(serving.acquire('vision.vlm'), {
    code: 'EUNSERVED',
    message: /vision\.vlm is disabled/,
  });
  await t.throwsAsync(serving.acquire('voice.tts'), { code: 'EUNSERVED', message: /not configured/ });
});

test('acquire: waits while the slot is loading and takes the instance once it serves; times out otherwise', async (t) => {
  const { parts, placement, serving } = await setup();
  const waiting = serving.acquire('voice.llm', { timeoutMs: 5_000 });
  await new Promise((r) => setTimeout(r, 20));
  const inst = await serveInstance(parts, placement);
  parts.core.table.wakeServingWaiters();
  t.like(await waiting, { instanceKey: inst.spec.key });
  parts.core.table.unserve(inst.spec.key);
  await t.throwsAsync(serving.acquire('voice.llm', { timeoutMs: 30 }), {
    code: 'ETIMEDOUT',
    message: 'slot voice.llm was not served within 30 ms',
  });
});

test('generate: the text of the leased host, and the slot counts the request', async (t) => {
  const { parts, placement, serving } = await setup();
  const inst = await serveInstance(parts, placement);
  parts.world.behaviour.tokens = 3;
  const r = await serving.generate('voice.llm', { prompt: 'hi' });
  t.is(r.text, '1:0 1:1 1:2 ');
  t.is(r.instanceKey, inst.spec.key);
  t.like(
    serving.slotStats().find((s) => s.slot === 'voice.llm'),
    { requests: 1, errors: 0, model: 'tiny-llm@1', backend: inst.spec.config.backend_type },
  );
});

test("acquire: a parked slot's next request plans it back in before it waits for the lease", async (t) => {
  const { parts, placement, serving } = await setup();
  const inst = await serveInstance(parts, placement);
  t.true(await parts.planning.park('voice.llm', 'keep_alive 0'));
  t.true(parts.planning.isParked('voice.llm'));
  const lease = await serving.acquire('voice.llm', { timeoutMs: 5_000 });
  t.false(parts.planning.isParked('voice.llm'));
  t.like(lease, { kind: 'engine', instanceKey: inst.spec.key });
  lease.release();
});

test('acquire after the runtime stopped: refused, not parked', async (t) => {
  const { parts, serving } = await setup();
  parts.stop();
  await t.throwsAsync(serving.acquire('voice.llm'), { code: 'ESTOPPED' });
});

test("generate: the slot stats count each generation's KV reuse: hit, partial, miss, tokens kept and prefilled", async (t) => {
  const { parts, placement, serving } = await setup();
  await serveInstance(parts, placement);
  parts.world.behaviour.tokens = 2;
  await serving.generate('voice.llm', { prompt: 'Hello' });
  await serving.generate('voice.llm', { prompt: 'Hello there' });
  await serving.generate('voice.llm', { prompt: 'Howdy' });
  const kv = serving.slotStats().find((s) => s.slot === 'voice.llm')?.kv;
  t.like(kv, { hits: 1, partials: 1, misses: 1, reusedTokens: 5 + 1 });
  t.is(kv?.prefilledTokens, 5 + 6 + 4);
  t.deepEqual(kv?.last, {
    outcome: 'partial',
    reason: 'diverged',
    reusedTokens: 1,
    prefilledTokens: 4,
    newHost: false,
  });
});
