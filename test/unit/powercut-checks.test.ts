// The power-cut run's telemetry arithmetic (scripts/system-image/powercut-checks.ts) on recorded arrivals: what
// counts as lost against the window, which duplicates QoS 1 allows, and the faults that must never happen.
import test from 'ava';
import { checkTelemetry, seqFaults } from '../../scripts/system-image/powercut-checks.js';
import type { Received } from '../../scripts/system-image/powercut-host.js';

const window = {
  flushIntervalMs: 5000,
  publishIntervalMs: 1000,
  flushMaxMessages: 10,
  flushMaxAcks: 200,
  maxInflight: 32,
};
// One message a second from t=0; guest and host clocks equal; the cut at t=20.5 s.
const cut = { hostMs: 20_500, offsetMs: 0, offsetErrMs: 100 };
const made = (seq: number, at: number): Received => ({ seq, ts: seq * 1000, at });

test('the time since the newest survivor is measured against flush + publish, as a figure', (t) => {
  // Committed up to seq 16 (made at 16 s), each arriving a second after it was made; after the boot, seq 17
  // is the next message, made at 200 s.
  const arrivals = [
    ...Array.from({ length: 17 }, (_, s) => made(s, s * 1000 + 1000)),
    { seq: 17, ts: 200_000, at: 201_000 },
  ];
  const r = checkTelemetry(arrivals, cut, window);
  t.is(r.lostMs, 4500);
  t.is(r.window, 6000);
  t.true(r.withinWindow);
  t.is(r.duplicates, 0);
  const late = checkTelemetry(
    arrivals.filter((m) => m.seq <= 12 || m.seq === 17),
    cut,
    window,
  );
  t.is(late.lostMs, 8500);
  t.false(late.withinWindow);
});

test('the loss is counted in messages against flushMaxMessages, the bound that holds for a late agent', (t) => {
  // A starved guest: one message every 4 s, the flush timer late. Committed up to seq 5 (made at 20 s); the agent
  // had made seq 7 by the read just before the cut at 40.5 s, and seq 6 is next after the boot (reused).
  const slow = (seq: number, at: number): Received => ({ seq, ts: seq * 4000, at });
  const arrivals = [
    ...Array.from({ length: 6 }, (_, s) => slow(s, s * 4000 + 1000)),
    { seq: 6, ts: 250_000, at: 300_000 },
  ];
  const late = { hostMs: 40_500, offsetMs: 0, offsetErrMs: 1500, lastSeq: 7 };
  const r = checkTelemetry(arrivals, late, window);
  t.is(r.lostMs, 20_500, '20.5 s since the newest survivor: far beyond the on-time window');
  t.false(r.withinWindow);
  t.is(r.lostMessages, 2, 'but two messages lost');
  t.true(r.withinBound, 'within flushMaxMessages');
  t.is(r.blindMs, 3000, 'read inside the guest-agent round trip: anywhere in it');
  t.is(checkTelemetry(arrivals, { ...late, blindMs: 400 }, window).blindMs, 400, 'read last, over HTTP');
  const many = checkTelemetry(arrivals, { ...late, lastSeq: 16 }, window);
  t.is(many.lostMessages, 11);
  t.false(many.withinBound);
  const unread = checkTelemetry(arrivals, { hostMs: 40_500, offsetMs: 0, offsetErrMs: 1500 }, window);
  t.is(unread.lostMessages, undefined);
  t.false(unread.withinBound, 'not read is not a pass');
});

test('a message sent again after the boot is a duplicate; beyond the window only if its first copy was older', (t) => {
  const arrivals = [
    made(10, 11_000),
    made(19, 20_000), // acknowledged 0.5 s before the cut: may come again
    { seq: 19, ts: 19_000, at: 300_000 },
    { seq: 10, ts: 10_000, at: 300_100 }, // acknowledged 9.5 s before: its deletion was committed long ago
  ];
  const r = checkTelemetry(arrivals, cut, window);
  t.is(r.duplicates, 2);
  t.is(r.duplicatesBeyondWindow, 1, 'a figure: a late agent commits acknowledgements later');
  t.true(r.duplicatesWithinBound, 'the bound is flushMaxAcks + maxInflight');
  t.is(r.duplicateBound, 232);
  t.false(
    checkTelemetry(arrivals, cut, { ...window, flushMaxAcks: 0, maxInflight: 1 }).duplicatesWithinBound,
  );
});

test('a seq with two production times is a reused number; a missing seq is a gap', (t) => {
  const f = seqFaults([made(1, 0), made(2, 0), { seq: 2, ts: 99_000, at: 0 }, made(5, 0)]);
  t.deepEqual(f.reused, [2]);
  t.deepEqual(f.gaps, [3, 4]);
  t.deepEqual(seqFaults([made(1, 0), made(2, 0), made(2, 5)]), { reused: [], gaps: [] });
});
