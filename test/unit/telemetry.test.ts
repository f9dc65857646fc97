import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { defaultTelemetryConfig, type TelemetryConfig } from '../../agent/config/sections/telemetry.js';
import { type TelemetryMessage, telemetrySchema } from '../../agent/fleet/protocol.js';
import { openStore } from '../../agent/store/database.js';
import { MetricAggregator } from '../../agent/telemetry/aggregate.js';
import { TelemetryHistory } from '../../agent/telemetry/history.js';
import { Outbox } from '../../agent/telemetry/outbox.js';
import { slotGauges } from '../../agent/telemetry/runtime-stats.js';
import {
  cpuSampler,
  diskSampler,
  memorySampler,
  networkSampler,
  parseNetDev,
  processSampler,
  type Sampler,
  thermalSampler,
  thermalZoneName,
} from '../../agent/telemetry/samplers.js';
import { TelemetryService } from '../../agent/telemetry/service.js';
import type { Clock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { validate } from '../../lib/schema.js';
import { socFixturesDir } from '../helpers/paths.js';
import { until } from '../helpers/until.js';

function fakeClock(start = 1_800_000_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    monotonicMs: () => now,
    nowMs: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

test('the aggregator keeps min/mean/max/n per metric and resets on take()', (t) => {
  const a = new MetricAggregator();
  a.addAll({ x: 1, y: 10 });
  a.addAll({ x: 3 });
  a.add('x', 2);
  a.add('x', Number.NaN); // a sensor glitch is not a sample
  t.deepEqual(a.take(), { x: { min: 1, mean: 2, max: 3, n: 3 }, y: { min: 10, mean: 10, max: 10, n: 1 } });
  t.is(a.size, 0);
  t.deepEqual(a.take(), {});
});

test('history merges points into buckets and downsamples queries', (t) => {
  const clock = fakeClock(0);
  const h = new TelemetryHistory(openStore(':memory:'), { bucketSec: 60, retentionHours: 1 }, clock);
  h.record({ cpu: { min: 1, mean: 2, max: 3, n: 2 } }, 10_000);
  h.record({ cpu: { min: 0, mean: 5, max: 9, n: 2 } }, 50_000); // same minute
  h.record({ cpu: { min: 4, mean: 4, max: 4, n: 1 } }, 70_000);
  t.deepEqual(h.query({ metrics: ['cpu'], since: 0, until: 120_000 }), {
    cpu: [
      { t: 0, min: 0, mean: 3.5, max: 9 },
      { t: 60_000, min: 4, mean: 4, max: 4 },
    ],
  });
  t.deepEqual(h.query({ metrics: ['cpu'], since: 0, until: 119_999, maxPoints: 1 }), {
    cpu: [{ t: 0, min: 0, mean: 18 / 5, max: 9 }],
  });
  t.deepEqual(h.query({ metrics: ['absent'], since: 0, until: 1 }), { absent: [] });
  t.deepEqual(h.metrics(), ['cpu']);
});

test('history retention prunes old buckets', (t) => {
  const clock = fakeClock(0);
  const h = new TelemetryHistory(openStore(':memory:'), { bucketSec: 60, retentionHours: 1 }, clock);
  h.record({ cpu: { min: 1, mean: 1, max: 1, n: 1 } }, 0);
  h.record({ cpu: { min: 1, mean: 1, max: 1, n: 1 } }, 3_600_000);
  t.is(h.prune(3_600_000 + 30_000), 1);
  t.is(h.query({ metrics: ['cpu'], since: 0, until: 10_000_000 })['cpu']!.length, 1);
});

test('history queries reject bad input with specific messages', (t) => {
  const h = new TelemetryHistory(openStore(':memory:'), { bucketSec: 60, retentionHours: 1 }, fakeClock());
  t.throws(() => h.query({ metrics: [], since: 0 }), {
    message: 'Expected an array of 1 to 64 metric names for metrics but received array(0)',
  });
  t.throws(() => h.query({ metrics: ['a b'], since: 0 }), {
    message: 'Expected a metric name for metrics[] but received "a b"',
  });
  t.throws(() => h.query({ metrics: ['a'], since: 10, until: 5 }), {
    message: 'Expected epoch milliseconds >= since (10) for until but received number 5',
  });
  t.throws(() => h.query({ metrics: ['a'], since: 0, until: 1, maxPoints: 0 }), {
    message: 'Expected an integer from 1 to 10000 for maxPoints but received number 0',
  });
});

test('thermal zones are read per zone from a board root', async (t) => {
  const s = await thermalSampler(join(socFixturesDir, 'qcom-qcs9075-iq9075-evk')).sample();
  t.deepEqual(s, { 'temp.cpu-0-0-0_c': 55, 'temp.nsp-0-0-0_c': 61, 'temp.ddrss-0_c': 50 });
  t.deepEqual(await thermalSampler('/nonexistent').sample(), {});
  t.is(thermalZoneName('cpu-thermal', 0), 'cpu');
  t.is(thermalZoneName('  ', 3), 'zone3');
  t.is(thermalZoneName('soc thermal/x', 1), 'soc_thermal_x');
});

const NET_DEV = (
  rx: number,
  tx: number,
) => `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 999 1 0 0 0 0 0 0 999 1 0 0 0 0 0 0
  eth0: ${rx} 10 0 0 0 0 0 0 ${tx} 10 0 0 0 0 0 0
`;

test('network rates come from /proc/net/dev deltas; loopback and counter resets are skipped', async (t) => {
  t.deepEqual([...parseNetDev(NET_DEV(100, 200))], [['eth0', { rx: 100, tx: 200 }]]);
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-net-'));
  try {
    mkdirSync(join(root, 'proc', 'net'), { recursive: true });
    const clock = fakeClock(0);
    const s = networkSampler(root, clock.monotonicMs);
    writeFileSync(join(root, 'proc', 'net', 'dev'), NET_DEV(1000, 2000));
    t.deepEqual(await s.sample(), {}, 'the first read only sets the baseline');
    clock.advance(2000);
    writeFileSync(join(root, 'proc', 'net', 'dev'), NET_DEV(3000, 2500));
    t.deepEqual(await s.sample(), { 'net.eth0.rx_bps': 8000, 'net.eth0.tx_bps': 2000 });
    clock.advance(1000);
    writeFileSync(join(root, 'proc', 'net', 'dev'), NET_DEV(10, 10));
    t.deepEqual(await s.sample(), {});
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('cpu, memory and disk samplers name their metrics', async (t) => {
  const cpu = await cpuSampler(async () => ({
    currentLoad: 50,
    cpus: [{ load: 40 }, { load: 60 }],
  })).sample();
  t.deepEqual(cpu, { 'cpu.load_pct': 50, 'cpu.core0.load_pct': 40, 'cpu.core1.load_pct': 60 });
  const mem = await memorySampler(async () => ({ total: 1000, available: 250 })).sample();
  t.deepEqual(mem, { 'mem.used_bytes': 750, 'mem.available_bytes': 250, 'mem.used_pct': 75 });
  const disk = await diskSampler(tmpdir()).sample();
  t.true(disk['disk.used_pct']! >= 0 && disk['disk.used_pct']! <= 100);
  t.true(disk['disk.free_bytes']! > 0);
  t.deepEqual(await diskSampler('/nonexistent/x').sample(), {});
});

test('slot gauges become metrics named per slot', (t) => {
  t.deepEqual(
    slotGauges([
      { slot: 'chat', tokensPerSec: 12, ttftMs: 300, hostRssBytes: 1e8, requests: 1, errors: 0 },
      { slot: 'vision/1', requests: 0, errors: 0 },
    ]),
    { 'slot.chat.tokens_per_sec': 12, 'slot.chat.ttft_ms': 300, 'slot.chat.rss_bytes': 1e8 },
  );
});

function service(samplers: Sampler[], clock = fakeClock(), intervals: Partial<TelemetryConfig> = {}) {
  const db = openStore(':memory:');
  const config: TelemetryConfig = {
    ...defaultTelemetryConfig,
    ...intervals,
    outbox: { ...defaultTelemetryConfig.outbox, flushIntervalMs: 0, messageExpirySec: 100 },
  };
  const outbox = new Outbox({ db, config: config.outbox, clock, logger: createMemoryLogger() });
  const history = new TelemetryHistory(db, config.history, clock);
  let tps = 10;
  const nextTps = () => {
    tps += 10;
    return tps;
  };
  const svc = new TelemetryService({
    deviceId: 'd1',
    config,
    db,
    history,
    samplers,
    runtime: {
      slots: () => [
        {
          slot: 'chat',
          model: 'qwen',
          variant: 'int4',
          backend: 'cpu',
          tokensPerSec: nextTps(),
          requests: 3,
          errors: 1,
        },
      ],
    },
    workloads: { metrics: () => ({ 'workload.voice.turn_ms': 800 }) },
    clock,
    logger: createMemoryLogger(),
  });
  svc.deliverTo({ outbox, topic: 'mnn-edge/d1/telemetry' });
  return { svc, outbox, history, clock };
}

test('a publish interval of whole sample rounds publishes right after every n-th round: n rounds a message', async (t) => {
  // One wake-up for both (issue 31, bench/idle). A publish on a timer of its own would hold 2, 3 or 4 rounds
  // depending on where the two timers fall; after its own round, always exactly n.
  const cpu: Sampler = { name: 'cpu', sample: async () => ({ 'cpu.load_pct': 1 }) };
  const { svc, outbox } = service([cpu], fakeClock(), { sampleIntervalMs: 10, publishIntervalMs: 30 });
  t.teardown(() => svc.stop());
  svc.start();
  await until(() => outbox.next(0, 10).length >= 3, 'three telemetry messages');
  svc.stop();
  const rounds = outbox
    .next(0, 10)
    .map((r) => (JSON.parse(r.payload.toString()) as TelemetryMessage).metrics['cpu.load_pct']!.n);
  // The first message also holds the round start() takes at once.
  t.deepEqual(rounds.slice(0, 3), [4, 3, 3]);
});

test('one telemetry message per interval: aggregated, schema-valid, with slots and outbox counters', async (t) => {
  let load = 0;
  const failing: Sampler = { name: 'broken', sample: () => Promise.reject(new Error('EIO')) };
  const counting: Sampler = {
    name: 'cpu',
    sample: async () => {
      load += 10;
      return { 'cpu.load_pct': load };
    },
  };
  const { svc, outbox, history, clock } = service([counting, failing]);
  await svc.sample();
  clock.advance(1000);
  await svc.sample();
  clock.advance(1000);
  await svc.sample();
  const seq = await svc.publish();
  t.is(seq, 1);
  const [row] = outbox.next(0, 10);
  const m = JSON.parse(row!.payload.toString()) as TelemetryMessage;
  t.deepEqual(validate(telemetrySchema, m), []);
  t.is(row!.topic, 'mnn-edge/d1/telemetry');
  t.like(m, { seq: 1, deviceId: 'd1', intervalMs: 2000, expiresAt: m.ts + 100_000 });
  t.deepEqual(m.metrics['cpu.load_pct'], { min: 10, mean: 20, max: 30, n: 3 });
  t.deepEqual(m.metrics['slot.chat.tokens_per_sec'], { min: 20, mean: 30, max: 40, n: 3 });
  t.deepEqual(m.metrics['workload.voice.turn_ms'], { min: 800, mean: 800, max: 800, n: 3 });
  t.deepEqual(m.slots, {
    chat: {
      requests: 3,
      errors: 1,
      model: 'qwen',
      variant: 'int4',
      backend: 'cpu',
      tokensPerSec: 40,
      intervalRequests: 3,
    },
  });
  t.deepEqual(m.outbox, { queued: 0, dropped: { expired: 0, overflow: 0, diskFull: 0 } });
  t.deepEqual(
    history.query({ metrics: ['cpu.load_pct'], since: 0 })['cpu.load_pct']!.map((p) => p.mean),
    [20],
  );
  t.is(await svc.publish(), undefined, 'an interval without samples produces no message');
});

test('maintenance expires the outbox and prunes history', async (t) => {
  const { svc, outbox, clock } = service([{ name: 'x', sample: async () => ({ a: 1 }) }]);
  await svc.sample();
  await svc.publish();
  clock.advance(200_000);
  t.like(svc.maintain(), { expired: 1, vacuumed: false });
  t.is(outbox.stats().dropped.expired, 1);
});

test('the agent sampler reports its own memory, descriptors, handles and timers', async (t) => {
  const timer = setInterval(() => {}, 60_000);
  try {
    const m = await processSampler().sample();
    t.true(m['agent.rss_bytes']! > 0 && m['agent.heap_used_bytes']! > 0);
    t.true(m['agent.fds']! >= 3, `fds ${m['agent.fds']}`);
    t.true(m['agent.timers']! >= 1, 'the interval above is counted');
    t.true(m['agent.handles']! >= m['agent.timers']!);
  } finally {
    clearInterval(timer);
  }
});
