import test from 'ava';
import { PresenceGuard } from '../../agent/fleet/presence-guard.js';
import { encode, PROTOCOL_VERSION, type StatusMessage } from '../../agent/fleet/protocol.js';
import { createMemoryLogger } from '../../lib/log.js';

// The guard against a broker that acknowledged "online" and kept something else (a NATS node between leaders,
// a late Last Will). Driven here with a scripted broker: what it sends back on the status topic. The cluster
// test (fleet-cluster) runs it against a real NATS node being killed.

function status(state: 'online' | 'offline', ts?: number, deviceId = 'dev-1'): Buffer {
  const m: StatusMessage = { v: PROTOCOL_VERSION, state, deviceId, ...(ts !== undefined ? { ts } : {}) };
  return Buffer.from(encode('status', m));
}

function harness(opts: { connected?: boolean } = {}) {
  let now = 1_000;
  const published: number[] = [];
  const reads: number[] = [];
  let connected = opts.connected ?? true;
  const guard = new PresenceGuard({
    deviceId: 'dev-1',
    publishOnline: () => {
      if (!connected) return undefined;
      now += 1;
      published.push(now);
      return now;
    },
    readRetained: () => {
      reads.push(now);
      return connected;
    },
    logger: createMemoryLogger(),
    firstCheckMs: 5,
    maxCheckMs: 20,
  });
  return {
    guard,
    published,
    reads,
    disconnect: () => {
      connected = false;
      guard.disconnected();
    },
  };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A generous budget, never a bound: a busy machine delays timers. */
async function until(cond: () => boolean, budgetMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + budgetMs;
  while (!cond() && Date.now() < deadline) await wait(5);
  return cond();
}

test('the retained copy of its own online confirms it; the checks stop', async (t) => {
  const h = harness();
  h.guard.published(500);
  t.true(await until(() => h.reads.length >= 1), 'the retained status was asked for');
  h.guard.onStatus(status('online', 500), { retain: true });
  t.true(h.guard.confirmed);
  const asked = h.reads.length;
  await wait(60);
  t.is(h.reads.length, asked, 'no more reads once confirmed');
  t.deepEqual(h.published, [], 'nothing republished');
});

test('a live echo of its own publish is not proof of storage: the checks go on', async (t) => {
  const h = harness();
  h.guard.published(500);
  h.guard.onStatus(status('online', 500), { retain: false });
  t.false(h.guard.confirmed);
  t.true(await until(() => h.reads.length >= 2), `retained reads: ${h.reads.length}`);
  h.guard.stop();
});

test('a retained older online (the new one was dropped) is answered with online again, then verified', (t) => {
  const h = harness();
  h.guard.published(500);
  h.guard.onStatus(status('online', 400), { retain: true });
  t.is(h.published.length, 1);
  t.false(h.guard.confirmed);
  h.guard.onStatus(status('online', h.published[0]), { retain: true });
  t.true(h.guard.confirmed);
  h.guard.stop();
});

test('a Last Will stored late (offline, live or retained) is answered with online', (t) => {
  const h = harness();
  h.guard.published(500);
  h.guard.onStatus(status('offline'), { retain: false });
  t.is(h.published.length, 1);
  h.guard.onStatus(status('offline'), { retain: true });
  t.is(h.published.length, 2);
  h.guard.stop();
});

test('while disconnected, before the first online, and for other devices or bad payloads: nothing', (t) => {
  const h = harness();
  h.guard.onStatus(status('offline'), { retain: true });
  t.is(h.published.length, 0, 'before the first online of a connection');
  h.guard.published(500);
  h.guard.onStatus(status('offline', undefined, 'dev-2'), { retain: true });
  h.guard.onStatus(Buffer.from('{not json'), { retain: true });
  h.guard.onStatus(Buffer.from(JSON.stringify({ state: 'offline' })), { retain: true });
  t.is(h.published.length, 0);
  h.disconnect();
  h.guard.onStatus(status('offline'), { retain: true });
  t.is(h.published.length, 0, 'after the connection was lost');
});

test('stop() ends the checks: the clean offline of a shutdown is not answered', async (t) => {
  const h = harness();
  h.guard.published(500);
  h.guard.stop();
  h.guard.onStatus(status('offline', 600), { retain: false });
  await wait(30);
  t.is(h.published.length, 0);
  t.is(h.reads.length, 0);
});
