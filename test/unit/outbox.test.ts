import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { OutboxConfig } from '../../agent/config/sections/telemetry.js';
import { type Db, openStore } from '../../agent/store/database.js';
import { OutboxDrainer, type QosPublisher } from '../../agent/telemetry/drain.js';
import { vacuumIfWorthIt } from '../../agent/telemetry/maintenance.js';
import { Outbox, type OutboxMessage } from '../../agent/telemetry/outbox.js';
import type { Clock } from '../../lib/clock.js';
import { createMemoryLogger } from '../../lib/log.js';
import { until } from '../helpers/until.js';

function fakeClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    monotonicMs: () => now,
    nowMs: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

const baseConfig: OutboxConfig = {
  maxMessages: 1000,
  maxBytes: 1024 * 1024,
  messageExpirySec: 60,
  flushIntervalMs: 60_000, // tests flush by hand unless they test the timer
  flushMaxMessages: 1000, // or the count bounds
  flushMaxAcks: 1000,
  drainRatePerSec: 0,
  maxInflight: 4,
};

function makeOutbox(config: Partial<OutboxConfig> = {}, db: Db = openStore(':memory:'), clock = fakeClock()) {
  const outbox = new Outbox({
    db,
    config: { ...baseConfig, ...config },
    clock,
    logger: createMemoryLogger(),
  });
  return { outbox, db, clock };
}

const body = (seq: number) => JSON.stringify({ seq });

test('messages get consecutive sequence numbers and become visible only when committed', (t) => {
  const { outbox } = makeOutbox();
  t.deepEqual([outbox.enqueue('a', body), outbox.enqueue('a', body), outbox.enqueue('b', body)], [1, 2, 3]);
  t.deepEqual(outbox.next(0, 10), [], 'buffered inside the loss window, not yet durable');
  t.is(outbox.stats().pending, 3);
  outbox.flush();
  const rows = outbox.next(0, 10);
  t.deepEqual(
    rows.map((r) => [r.seq, r.topic, r.payload.toString()]),
    [
      [1, 'a', '{"seq":1}'],
      [2, 'a', '{"seq":2}'],
      [3, 'b', '{"seq":3}'],
    ],
  );
  t.deepEqual(
    outbox.next(2, 10).map((r) => r.seq),
    [3],
  );
  t.like(outbox.stats(), { queued: 3, pending: 0, nextSeq: 4 });
});

test('the flush timer commits a batch at most flushIntervalMs after it started', async (t) => {
  const { outbox } = makeOutbox({ flushIntervalMs: 15 });
  const committed = new Promise<number>((resolve) => outbox.on('committed', (e) => resolve(e.count)));
  outbox.enqueue('a', body);
  outbox.enqueue('a', body);
  t.is(await committed, 2);
  t.is(outbox.next(0, 10).length, 2);
});

test('flushIntervalMs 0 commits every message at once', (t) => {
  const { outbox } = makeOutbox({ flushIntervalMs: 0 });
  outbox.enqueue('a', body);
  t.is(outbox.next(0, 10).length, 1);
});

test('with the timer late, the count bounds commit once flushMaxMessages messages or flushMaxAcks acknowledgements wait', (t) => {
  // The interval never comes (a starved agent's timer); the count alone must keep the loss bounded.
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-outbox-'));
  try {
    const path = join(dir, 'a.db');
    const first = makeOutbox(
      { flushIntervalMs: 3_600_000, flushMaxMessages: 3, flushMaxAcks: 3 },
      openStore(path),
    );
    for (let i = 0; i < 7; i++) first.outbox.enqueue('a', body);
    t.is(first.outbox.stats().pending, 1, 'committed at 3 and at 6, without the timer');
    t.deepEqual(
      first.outbox.next(0, 10).map((r) => r.seq),
      [1, 2, 3, 4, 5, 6],
    );
    for (const seq of [1, 2]) first.outbox.acknowledge(seq);
    t.is(first.outbox.stats().queued, 6, 'two acknowledgements wait for a commit');
    first.outbox.acknowledge(3);
    t.is(first.outbox.stats().queued, 4, 'the third commits them, with the pending message (seq 7)');
    t.is(first.outbox.stats().pending, 0);
    first.outbox.enqueue('a', body);
    first.db.close(); // the power cut: seq 8 was never committed
    const second = makeOutbox({}, openStore(path));
    t.deepEqual(
      second.outbox.next(0, 10).map((r) => r.seq),
      [4, 5, 6, 7],
      'a cut lost one message, fewer than flushMaxMessages',
    );
    second.db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('acknowledged messages leave with the next commit', (t) => {
  const { outbox } = makeOutbox();
  for (let i = 0; i < 3; i++) outbox.enqueue('a', body);
  outbox.flush();
  outbox.acknowledge(2);
  outbox.acknowledge(99); // unknown: harmless
  t.is(outbox.stats().queued, 3);
  outbox.flush();
  t.deepEqual(
    outbox.next(0, 10).map((r) => r.seq),
    [1, 3],
  );
  t.like(outbox.stats(), { queued: 2, queuedBytes: 2 * body(1).length });
});

test('sequence numbers survive a restart; uncommitted messages are the loss window and their numbers are reused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-outbox-'));
  try {
    const path = join(dir, 'a.db');
    const first = makeOutbox({}, openStore(path));
    first.outbox.enqueue('a', body);
    first.outbox.enqueue('a', body);
    first.outbox.flush();
    first.outbox.enqueue('a', body); // seq 3: never committed, lost on "power cut"
    first.db.close();
    const second = makeOutbox({}, openStore(path));
    t.is(second.outbox.stats().nextSeq, 3);
    t.deepEqual(
      second.outbox.next(0, 10).map((r) => r.seq),
      [1, 2],
    );
    t.is(second.outbox.enqueue('a', body), 3);
    second.outbox.close();
    second.db.close();
    const third = makeOutbox({}, openStore(path));
    t.deepEqual(
      third.outbox.next(0, 10).map((r) => r.seq),
      [1, 2, 3],
      'close() commits what was buffered',
    );
    third.db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('expired messages are skipped, deleted and counted', (t) => {
  const { outbox, clock } = makeOutbox({ messageExpirySec: 10 });
  outbox.enqueue('a', body);
  clock.advance(5_000);
  outbox.enqueue('a', body);
  outbox.flush();
  clock.advance(6_000); // first expired, second not
  t.deepEqual(
    outbox.next(0, 10).map((r) => r.seq),
    [2],
  );
  t.is(outbox.expire(), 1);
  t.like(outbox.stats(), { queued: 1 });
  t.deepEqual(outbox.stats().dropped, { expired: 1, overflow: 0, diskFull: 0 });
  const expiresAt = outbox.next(0, 10)[0]!.expiresAt;
  t.is(expiresAt, 1_000_000 + 5_000 + 10_000);
});

test('the message bound drops the oldest first and counts them', (t) => {
  const { outbox } = makeOutbox({ maxMessages: 5 });
  for (let i = 0; i < 8; i++) outbox.enqueue('a', body);
  outbox.flush();
  t.deepEqual(
    outbox.next(0, 10).map((r) => r.seq),
    [4, 5, 6, 7, 8],
  );
  t.like(outbox.stats(), { queued: 5, dropped: { expired: 0, overflow: 3, diskFull: 0 } });
});

test('the byte bound drops the oldest first', (t) => {
  const { outbox } = makeOutbox({ maxBytes: 1024 });
  const big = () => 'x'.repeat(300);
  for (let i = 0; i < 5; i++) outbox.enqueue('a', big);
  outbox.flush();
  t.deepEqual(
    outbox.next(0, 10).map((r) => r.seq),
    [3, 4, 5],
  );
  t.like(outbox.stats(), { queued: 3, queuedBytes: 900, dropped: { expired: 0, overflow: 2, diskFull: 0 } });
});

test('a full disk degrades telemetry (drops counted) without throwing, and recovers when space returns', (t) => {
  const db = openStore(':memory:');
  const { outbox, clock } = makeOutbox({ messageExpirySec: 10 }, db);
  outbox.enqueue('a', body);
  outbox.flush();
  // Cap the database at its current size: the next big batch cannot fit, exactly as on a full filesystem.
  const pages = db.pragma('page_count', { simple: true }) as number;
  db.pragma(`max_page_count = ${pages}`);
  const degraded = new Promise<string>((resolve) => outbox.on('degraded', (e) => resolve(e.reason)));
  for (let i = 0; i < 20; i++) outbox.enqueue('a', () => 'y'.repeat(4000));
  t.notThrows(() => outbox.flush());
  t.like(outbox.stats(), { degraded: true, pending: 0, queued: 1 });
  t.is(outbox.stats().dropped.diskFull, 20);
  return degraded.then((reason) => {
    t.regex(reason, /full/);
    db.pragma(`max_page_count = ${pages * 100}`);
    clock.advance(1);
    outbox.enqueue('a', body);
    outbox.flush();
    t.like(outbox.stats(), { degraded: false, queued: 2 });
    t.deepEqual(
      outbox.next(0, 10).map((r) => r.seq),
      [1, 22],
      'the gap 2..21 shows the loss to consumers',
    );
  });
});

test('VACUUM runs only when enough pages are free', (t) => {
  const { outbox, db } = makeOutbox({ flushIntervalMs: 0 });
  t.false(vacuumIfWorthIt(db).vacuumed);
  for (let i = 0; i < 400; i++) outbox.enqueue('a', () => 'z'.repeat(4000));
  for (let i = 1; i <= 400; i++) outbox.acknowledge(i);
  const r = vacuumIfWorthIt(db, { minFreeFraction: 0.25, minFreePages: 100 });
  t.true(r.vacuumed);
  t.true(r.freePages >= 100);
  t.is(db.pragma('freelist_count', { simple: true }), 0);
});

// --- drainer -------------------------------------------------------------------------------------------------

class FakePublisher implements QosPublisher {
  connected = true;
  sent: { seq: number; done: (err?: Error) => void }[] = [];
  publish(m: OutboxMessage, done: (err?: Error) => void): void {
    this.sent.push({ seq: m.seq, done });
  }
  ackAll(): void {
    for (const s of this.sent.splice(0)) s.done();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => queueMicrotask(r));
}

test('the drainer publishes in order with a bounded window and deletes on PUBACK', async (t) => {
  const { outbox, clock } = makeOutbox();
  for (let i = 0; i < 10; i++) outbox.enqueue('a', body);
  outbox.flush();
  const pub = new FakePublisher();
  const drainer = new OutboxDrainer({
    outbox,
    publisher: pub,
    maxInflight: 4,
    ratePerSec: 0,
    clock,
    logger: createMemoryLogger(),
  });
  drainer.kick();
  t.deepEqual(
    pub.sent.map((s) => s.seq),
    [1, 2, 3, 4],
  );
  const acked: number[] = [];
  while (pub.sent.length > 0) {
    acked.push(...pub.sent.map((s) => s.seq));
    pub.ackAll();
    await settle();
  }
  t.deepEqual(acked, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  outbox.flush();
  t.is(outbox.stats().queued, 0);
  t.like(drainer.stats(), { published: 10, acknowledged: 10, inflight: 0 });
  drainer.stop();
});

test('the drainer waits while disconnected, resumes on kick, and resends failures in order', async (t) => {
  const { outbox, clock } = makeOutbox();
  for (let i = 0; i < 3; i++) outbox.enqueue('a', body);
  outbox.flush();
  const pub = new FakePublisher();
  pub.connected = false;
  const drainer = new OutboxDrainer({
    outbox,
    publisher: pub,
    maxInflight: 10,
    ratePerSec: 0,
    clock,
    logger: createMemoryLogger(),
  });
  drainer.kick();
  t.is(pub.sent.length, 0);
  pub.connected = true;
  drainer.kick();
  t.deepEqual(
    pub.sent.map((s) => s.seq),
    [1, 2, 3],
  );
  const [one, two, three] = pub.sent.splice(0);
  pub.connected = false;
  two!.done(new Error('connection lost'));
  one!.done();
  three!.done();
  await settle();
  pub.connected = true;
  drainer.kick();
  t.deepEqual(
    pub.sent.map((s) => s.seq),
    [2],
  );
  drainer.stop();
});

test('the drain rate limit holds after a reconnect', async (t) => {
  const { outbox, clock } = makeOutbox();
  for (let i = 0; i < 50; i++) outbox.enqueue('a', body);
  outbox.flush();
  const pub = new FakePublisher();
  const drainer = new OutboxDrainer({
    outbox,
    publisher: pub,
    maxInflight: 100,
    ratePerSec: 10,
    clock,
    logger: createMemoryLogger(),
  });
  drainer.kick();
  t.is(pub.sent.length, 10, 'one second of burst');
  pub.ackAll();
  await settle();
  t.is(pub.sent.length, 0, 'no tokens left');
  clock.advance(500);
  drainer.kick();
  t.is(pub.sent.length, 5, 'half a second later, half the rate');
  drainer.stop();
});

test('new commits wake the drainer', async (t) => {
  const { outbox, clock } = makeOutbox();
  const pub = new FakePublisher();
  const drainer = new OutboxDrainer({
    outbox,
    publisher: pub,
    maxInflight: 10,
    ratePerSec: 0,
    clock,
    logger: createMemoryLogger(),
  });
  outbox.enqueue('a', body);
  outbox.flush();
  t.deepEqual(
    pub.sent.map((s) => s.seq),
    [1],
  );
  drainer.stop();
  outbox.enqueue('a', body);
  outbox.flush();
  t.is(pub.sent.length, 1, 'a stopped drainer stays quiet');
});

test('a broken database keeps the batch buffered (bounded) and the flush timer does not crash the process', async (t) => {
  const logger = createMemoryLogger();
  const db = openStore(':memory:');
  const outbox = new Outbox({
    db,
    config: { ...baseConfig, maxMessages: 3, flushIntervalMs: 5 },
    clock: fakeClock(),
    logger,
  });
  db.close();
  for (let i = 0; i < 5; i++) outbox.enqueue('a', body);
  t.throws(() => outbox.flush(), { message: 'The database connection is not open' });
  t.like(outbox.stats(), { pending: 3, dropped: { expired: 0, overflow: 2, diskFull: 0 } });
  outbox.enqueue('a', body); // arms the timer again
  await until(() => logger.lines.some((l) => l.includes('outbox commit failed')), 'the failed commit logged');
  t.pass();
});

test('the drainer skips messages that expired after they were read ahead', async (t) => {
  const { outbox, clock } = makeOutbox({ messageExpirySec: 10 });
  outbox.enqueue('a', body);
  clock.advance(5_000);
  outbox.enqueue('a', body);
  outbox.flush();
  const pub = new FakePublisher();
  const drainer = new OutboxDrainer({
    outbox,
    publisher: pub,
    maxInflight: 1,
    ratePerSec: 0,
    clock,
    logger: createMemoryLogger(),
  });
  drainer.kick(); // reads both ahead, publishes #1
  t.deepEqual(
    pub.sent.map((s) => s.seq),
    [1],
  );
  clock.advance(5_000); // #1 and #2's ages: 10 s and 5 s; #1 is now expired but already in flight
  clock.advance(5_000); // #2 expires too
  pub.ackAll();
  await settle();
  t.deepEqual(pub.sent, [], 'the expired #2 is not published');
  t.is(outbox.expire(), 1);
  t.is(outbox.stats().dropped.expired, 1);
  drainer.stop();
});
