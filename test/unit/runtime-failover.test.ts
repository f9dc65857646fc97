// Failure and fallback bookkeeping alone: fallbacks and recoveries announced once each, a dead or faulty
// serving host taken out of service with its failure recorded, and an operator's restart.
import test from 'ava';
import type { ActiveChoice } from '../../agent/runtime/desired/types.js';
import { EngineFailure } from '../../agent/runtime/engine/engine-port.js';
import { Failover } from '../../agent/runtime/reconciling/failover.js';
import { planned, runtimeParts, serveInstance } from './runtime-parts.js';

async function setup() {
  const parts = runtimeParts();
  const placement = await planned(parts);
  const inst = await serveInstance(parts, placement);
  const failover = new Failover(parts.core);
  return { parts, placement, inst, failover };
}

test('announce: a new fallback is told once (event, log, onFallback); going back is "recovered"', async (t) => {
  const { parts, placement, failover } = await setup();
  const preferred = placement.instances[0]!;
  const fallback = preferred.fallback[0]!;
  const told: string[] = [];
  failover.onFallback = (from, reason) => told.push(`${from}: ${reason}`);
  const onFallback: ActiveChoice = {
    plannedKey: preferred.key,
    active: fallback,
    slots: preferred.slots,
    fallback: { fromKey: preferred.key, reason: 'load failed', retryAtMs: Number.POSITIVE_INFINITY },
  };
  failover.announce([onFallback]);
  failover.announce([onFallback]);
  t.deepEqual(told, [`${preferred.key}: load failed`]);
  t.like(parts.seen('fallback'), [{ fromKey: preferred.key, toKey: fallback.key, retryInMs: -1 }]);
  failover.announce([{ plannedKey: preferred.key, active: preferred.chosen, slots: preferred.slots }]);
  t.like(parts.seen('recovered'), [{ key: preferred.chosen.key, slots: ['voice.llm'] }]);
  t.is(failover.choices()[0]?.active.key, preferred.chosen.key);
});

test('onExit: a serving host that dies is unserved, marked failed, its failure recorded and a run asked for', async (t) => {
  const { parts, inst, failover } = await setup();
  const runs = parts.triggers();
  failover.onExit(inst, { code: null, signal: 'SIGKILL' });
  t.is(parts.core.table.servingInstance('voice.llm'), undefined);
  t.is(inst.status, 'failed');
  t.is(parts.core.failures.get(inst.spec.key)?.count, 1);
  t.regex(parts.core.failures.get(inst.spec.key)?.reason ?? '', /exited unexpectedly/);
  t.is(parts.triggers(), runs + 1);
  t.like(parts.seen('host-exit'), [{ instanceKey: inst.spec.key, expected: false }]);
});

test('onExit: an exit we caused (stopped host) is announced but changes nothing', async (t) => {
  const { parts, inst, failover } = await setup();
  const runs = parts.triggers();
  parts.core.table.expectedExit.add(inst);
  failover.onExit(inst, { code: 0, signal: null });
  t.is(inst.status, 'ready');
  t.is(parts.core.failures.get(inst.spec.key), undefined);
  t.is(parts.triggers(), runs);
  t.like(parts.seen('host-exit'), [{ expected: true }]);
});

test('backendFault: in-flight requests are cut with the fault; a second fault on the failed host is ignored', async (t) => {
  const { parts, inst, failover } = await setup();
  const lease = inst.lease();
  failover.backendFault(inst.spec.key, new EngineFailure('backend', 'CL_OUT_OF_RESOURCES'));
  t.true(lease.signal.aborted);
  t.is((lease.signal.reason as EngineFailure).message, 'CL_OUT_OF_RESOURCES');
  failover.backendFault(inst.spec.key, new EngineFailure('backend', 'again'));
  t.is(parts.core.failures.get(inst.spec.key)?.count, 1);
});

test("restart: the slots' hosts are unserved and cancelled without a failure counted; returns their keys", async (t) => {
  const { parts, inst, failover } = await setup();
  const lease = inst.lease();
  const runs = parts.triggers();
  t.deepEqual(failover.restart(['voice.llm', 'voice.vad'], 'operator'), [inst.spec.key]);
  t.true(lease.signal.aborted);
  t.is(inst.status, 'failed');
  t.is(parts.core.failures.get(inst.spec.key), undefined);
  t.is(parts.triggers(), runs + 1);
});
