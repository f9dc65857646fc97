import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { type SyncObservation, timesyncdProbe } from '../../agent/time/sync-probe.js';
import { createTrustedTime, type KeyValue, LAST_KNOWN_GOOD_KEY } from '../../agent/time/trusted-time.js';
import type { Clock } from '../../lib/clock.js';

const DAY = 86_400_000;
const FLOOR = Date.UTC(2026, 0, 1);

function fakeClock(wallMs: number): Clock & { advance(ms: number): void; setWall(ms: number): void } {
  let wall = wallMs;
  let mono = 1_000;
  return {
    nowMs: () => wall,
    monotonicMs: () => mono,
    advance(ms) {
      wall += ms;
      mono += ms;
    },
    setWall(ms) {
      wall = ms;
    },
  };
}

function memoryKv(): KeyValue & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get: <T>(k: string) => data.get(k) as T | undefined,
    set: (k, v) => void data.set(k, structuredClone(v)),
  };
}

const synced = (): SyncObservation => ({ synchronized: true, evidence: 'test: ntp' });
const noInfo = (): SyncObservation => ({ synchronized: undefined, evidence: 'test: no ntp client' });

test('a board booting at 1970 is reported behind and trustedNow never goes below the floor', (t) => {
  const clock = fakeClock(0);
  const time = createTrustedTime({ kv: memoryKv(), clock, probe: noInfo, floorMs: FLOOR });
  const status = time.clockStatus();
  t.is(status.state, 'behind');
  t.false(status.synchronized);
  t.is(status.trustedMs, FLOOR);
  t.is(status.lagMs, FLOOR);
  t.true(
    status.evidence.startsWith(
      'wall clock 1970-01-01T00:00:00.000Z is earlier than the last known good time',
    ),
  );
  clock.advance(5_000);
  t.is(time.trustedNow(), FLOOR + 5_000);
});

test('the last known good time survives a restart and keeps counting on the monotonic clock', (t) => {
  const kv = memoryKv();
  const clock = fakeClock(FLOOR + 30 * DAY);
  const first = createTrustedTime({ kv, clock, probe: synced, floorMs: FLOOR });
  first.start();
  clock.advance(60_000);
  first.stop();
  t.deepEqual(kv.data.get(LAST_KNOWN_GOOD_KEY), { ms: FLOOR + 30 * DAY + 60_000, source: 'ntp' });

  // Reboot without RTC: the wall clock restarts at the image's build date, NTP is unreachable.
  const reboot = fakeClock(FLOOR + 1 * DAY);
  const second = createTrustedTime({ kv, clock: reboot, probe: noInfo, floorMs: FLOOR });
  t.is(second.clockStatus().state, 'behind');
  t.is(second.trustedNow(), FLOOR + 30 * DAY + 60_000);
  reboot.advance(10_000);
  t.is(second.trustedNow(), FLOOR + 30 * DAY + 70_000);
  second.checkpoint();
  t.deepEqual(kv.data.get(LAST_KNOWN_GOOD_KEY), { ms: FLOOR + 30 * DAY + 70_000, source: 'carried' });
});

test('an NTP-synchronised clock is authoritative, even below a bound left by an earlier wrong clock', (t) => {
  const kv = memoryKv();
  kv.set(LAST_KNOWN_GOOD_KEY, { ms: FLOOR + 400 * DAY, source: 'carried' });
  const clock = fakeClock(FLOOR + 10 * DAY);
  const time = createTrustedTime({ kv, clock, probe: synced, floorMs: FLOOR });
  const status = time.clockStatus();
  t.is(status.state, 'synchronized');
  t.is(status.trustedMs, FLOOR + 10 * DAY);
  time.checkpoint();
  t.deepEqual(kv.data.get(LAST_KNOWN_GOOD_KEY), { ms: FLOOR + 10 * DAY, source: 'ntp' });
});

test('without NTP the stored bound only moves forward', (t) => {
  const kv = memoryKv();
  kv.set(LAST_KNOWN_GOOD_KEY, { ms: FLOOR + 5 * DAY, source: 'ntp' });
  const clock = fakeClock(FLOOR + 2 * DAY);
  const time = createTrustedTime({ kv, clock, probe: noInfo, floorMs: FLOOR });
  time.checkpoint();
  t.deepEqual(kv.data.get(LAST_KNOWN_GOOD_KEY), { ms: FLOOR + 5 * DAY, source: 'ntp' });
  clock.advance(1_000);
  time.checkpoint();
  t.deepEqual(kv.data.get(LAST_KNOWN_GOOD_KEY), { ms: FLOOR + 5 * DAY + 1_000, source: 'carried' });
});

test('a plausible clock with no NTP evidence is unknown; a clock ahead of the bound is trusted as is', (t) => {
  const clock = fakeClock(FLOOR + 3 * DAY);
  const time = createTrustedTime({ kv: memoryKv(), clock, probe: noInfo, floorMs: FLOOR });
  t.is(time.clockStatus().state, 'unknown');
  t.is(time.trustedNow(), FLOOR + 3 * DAY);
  const waiting = createTrustedTime({
    kv: memoryKv(),
    clock,
    probe: () => ({ synchronized: false, evidence: 'waiting' }),
    floorMs: FLOOR,
  });
  t.is(waiting.clockStatus().state, 'unsynchronized');
});

test('garbage in the store is ignored rather than trusted', (t) => {
  const kv = memoryKv();
  kv.set(LAST_KNOWN_GOOD_KEY, { ms: 'tomorrow', source: 'ntp' });
  const time = createTrustedTime({ kv, clock: fakeClock(0), probe: noInfo, floorMs: FLOOR });
  t.is(time.trustedNow(), FLOOR);
  t.is(time.clockStatus().lastKnownGoodMs, undefined);
});

test('timesyncd probe reads the flag file below the root', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-timesync-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const probe = timesyncdProbe(root);
  t.deepEqual(probe(), {
    synchronized: undefined,
    evidence: 'no /run/systemd/timesync (systemd-timesyncd not running)',
  });
  mkdirSync(join(root, 'run/systemd/timesync'), { recursive: true });
  t.deepEqual(probe(), {
    synchronized: false,
    evidence: '/run/systemd/timesync exists but has no synchronized flag yet',
  });
  writeFileSync(join(root, 'run/systemd/timesync/synchronized'), '');
  t.deepEqual(probe(), { synchronized: true, evidence: '/run/systemd/timesync/synchronized exists' });
});
