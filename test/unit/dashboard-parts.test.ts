import { join } from 'node:path';
import test from 'ava';
import {
  brokerStatusFrom,
  feedFromSnapshots,
  SampleHub,
  telemetryPortFrom,
} from '../../agent/dashboard-api/adapters.js';
import { describeEvidence, overviewOf } from '../../agent/dashboard-api/overview.js';
import { detect } from '../../agent/detect/index.js';
import { createSessionLimiter, MessageRateLimiter } from '../../agent/http/session-limits.js';
import { LogTail } from '../../lib/log-tail.js';
import { TypedEventEmitter } from '../../lib/typed-events.js';
import { socFixturesDir } from '../helpers/paths.js';
import { until } from '../helpers/until.js';

// The dashboard API's pure parts: limits on a controlled clock, the bounded log tail, the overview document.

test('session limiter: refuses beyond the limit with the setting to change, frees a slot once per release', (t) => {
  const limiter = createSessionLimiter(2);
  const a = limiter.tryAcquire()!;
  const b = limiter.tryAcquire()!;
  t.is(limiter.tryAcquire(), undefined);
  t.is(
    limiter.refusal(),
    'Too many concurrent sessions: 2 of 2 are open (http.maxSessions); close one and retry',
  );
  a();
  a();
  t.is(limiter.active, 1, 'a second release of the same session does not free another slot');
  t.truthy(limiter.tryAcquire());
  b();
  t.throws(() => createSessionLimiter(0), { message: 'Session limit must be a positive integer, got 0' });
});

test('message rate: a burst passes, a flood is refused, tokens come back with time', (t) => {
  let now = 0;
  const rate = new MessageRateLimiter({ monotonicMs: () => now }, 10, 3);
  t.deepEqual([rate.take(), rate.take(), rate.take(), rate.take()], [true, true, true, false]);
  now += 100; // one token at 10/s
  t.deepEqual([rate.take(), rate.take()], [true, false]);
  now += 10_000;
  t.deepEqual(
    [rate.take(), rate.take(), rate.take(), rate.take()],
    [true, true, true, false],
    'never above the burst',
  );
  t.is(rate.describe(), 'Message rate over 10/s (burst 3) on this connection');
});

test('log tail: bounded by lines and bytes, long lines cut, foreign lines kept as stdout', (t) => {
  const tail = new LogTail({ maxLines: 100, maxBytes: 2000, maxLineChars: 50 });
  for (let i = 0; i < 30; i++)
    tail.write(JSON.stringify({ ts: `t${i}`, level: 'info', ns: 'n', msg: `m${i}` }));
  const all = tail.tail({ limit: 1000 });
  t.true(all.records.length < 30, 'older lines dropped to stay under maxBytes');
  t.is(all.records.at(-1)?.msg, 'm29');
  t.is(all.last, 30);
  tail.write(JSON.stringify({ ts: 't', level: 'warn', ns: 'n', msg: 'x'.repeat(200) }));
  const cut = tail.tail({ limit: 1 }).records[0]!;
  t.deepEqual(cut, { ts: 't', level: 'warn', ns: 'n', msg: 'x'.repeat(50), cut: true });
  tail.write('[MNN] native library line');
  const foreign = tail.tail({ limit: 1 }).records[0]!;
  t.is(foreign.ns, 'stdout');
  t.is(foreign.msg, '[MNN] native library line');
  t.deepEqual(
    tail.tail({ limit: 10, minLevel: 'warn' }).records.map((r) => r.level),
    ['warn'],
  );
});

test('overview: every claim keeps its evidence in words; without detection the unknowns say why', (t) => {
  t.is(
    describeEvidence({ kind: 'file', path: '/proc/cpuinfo', value: '8 processor entries' }),
    '/proc/cpuinfo: "8 processor entries"',
  );
  t.is(describeEvidence({ kind: 'missing', path: '/dev/rknpu' }), '/dev/rknpu missing');
  t.is(
    describeEvidence({
      kind: 'unreadable',
      path: '/sys/kernel/debug/rknpu/version',
      error: 'permission denied',
    }),
    '/sys/kernel/debug/rknpu/version unreadable (permission denied)',
  );
  t.is(
    describeEvidence({ kind: 'node', path: '/dev/dri/renderD129', present: true, via: 'present.txt' }),
    '/dev/dri/renderD129 present (present.txt)',
  );

  const status = {
    deviceId: 'd',
    version: 'v',
    uptimeS: 1,
    engine: { available: false as const, reason: 'r' },
    broker: { state: 'disabled' as const, reason: 'off' },
    health: { healthy: true, problems: [] },
  };
  const o = overviewOf(detect({ root: join(socFixturesDir, 'rockchip-rk3588-rock5b') }), status);
  t.deepEqual(
    o.cpu.clusters.map((c) => c.core),
    ['Cortex-A76', 'Cortex-A55'],
  );
  t.true(o.board.model.evidence.length > 0);
  t.true(o.cpu.features.includes('dotprod'));
  const none = overviewOf(undefined, status);
  t.deepEqual(none.board.model, { value: null, evidence: ['capability detection has not run'] });
  t.deepEqual(none.accelerators, []);
});

test('adapters: broker status follows the fleet’s connection events; snapshots feed the live hub once each', async (t) => {
  const events = new TypedEventEmitter<{ connected: { url: string }; disconnected: { reason: string } }>();
  const fleet = { connected: false, brokerUrl: 'mqtt://broker.lan:1883' as string | undefined, events };
  let now = 1000;
  const broker = brokerStatusFrom(fleet, () => now);
  t.deepEqual(broker.status(), {
    state: 'unreachable',
    url: 'mqtt://broker.lan:1883',
    error: 'not connected yet',
  });
  events.emit('disconnected', { reason: 'connect ECONNREFUSED' });
  t.deepEqual(broker.status(), {
    state: 'unreachable',
    url: 'mqtt://broker.lan:1883',
    error: 'connect ECONNREFUSED',
  });
  now = 5000;
  fleet.connected = true;
  events.emit('connected', { url: 'mqtt://broker.lan:1883' });
  t.deepEqual(broker.status(), { state: 'connected', url: 'mqtt://broker.lan:1883', sinceMs: 5000 });
  fleet.brokerUrl = undefined;
  t.is(broker.status().state, 'disabled');
  broker.dispose();
  t.is(events.listenerCount('connected'), 0);

  const hub = new SampleHub();
  const seen: number[] = [];
  hub.subscribe((s) => seen.push(s.t));
  let snapshot = { ts: 1, metrics: { 'cpu.load_pct': { min: 1, mean: 2, max: 3, n: 3 } }, slots: {} };
  const stop = feedFromSnapshots(hub, () => snapshot, 5);
  await until(() => seen.length === 1, 'the first snapshot');
  snapshot = { ...snapshot, ts: 2 };
  await until(() => seen.length === 2, 'the second snapshot');
  stop();
  t.deepEqual(seen, [1, 2]);
  const port = telemetryPortFrom({ metrics: () => ['mem.used_pct'], query: () => ({}) }, hub);
  t.deepEqual(port.metrics(), ['cpu.load_pct', 'mem.used_pct'], 'live metric names join the recorded ones');
  t.deepEqual(port.latest(), { t: 2, values: { 'cpu.load_pct': 2 } });
});

test('the live feed polls only while a chart is open, and a read of the latest sample is fresh', async (t) => {
  const hub = new SampleHub();
  let reads = 0;
  let ts = 1;
  const stop = feedFromSnapshots(
    hub,
    () => {
      reads++;
      return { ts, metrics: { 'cpu.load_pct': { min: 1, mean: ts, max: 3, n: 1 } }, slots: {} };
    },
    2,
  );
  await new Promise((r) => setTimeout(r, 30));
  t.is(reads, 0, 'nobody watches: no wake-ups');
  t.deepEqual(hub.latest(), { t: 1, values: { 'cpu.load_pct': 1 } });
  t.is(reads, 1, 'read through once for latest()');
  const seen: number[] = [];
  const off = hub.subscribe((s) => seen.push(s.t));
  ts = 2;
  await until(() => seen.includes(2), 'a sample while watched');
  off();
  const after = reads;
  await new Promise((r) => setTimeout(r, 30));
  t.is(reads, after, 'the last viewer left: polling stopped');
  t.is(hub.watchers, 0);
  stop();
});
