import test from 'ava';
import {
  type MessageHandler,
  type SubscribingClient,
  SubscriptionRegistry,
  topicMatches,
} from '../../agent/fleet/subscriptions.js';
import { createMemoryLogger } from '../../lib/log.js';
import { deviceIdOf, deviceIdOfSegment, deviceTopics, topicSegment } from '../../lib/topics.js';

// The registry is the one owner of subscriptions: these unit tests drive it with a recording client; the
// integration tests (fleet-resilience) drive it through real broker restarts and dropped connections.

class RecordingClient implements SubscribingClient {
  readonly subscribed: string[][] = [];
  readonly requested: Record<string, { qos: 0 | 1 | 2 }>[] = [];
  readonly unsubscribed: string[][] = [];
  constructor(private readonly refuse: readonly string[] = []) {}
  subscribe(
    filters: Record<string, { qos: 0 | 1 | 2 }>,
    cb: (err: Error | null | undefined, granted?: { topic: string; qos: number }[]) => void,
  ) {
    const topics = Object.keys(filters);
    this.subscribed.push(topics);
    this.requested.push(filters);
    cb(
      null,
      topics.map((topic) => ({ topic, qos: this.refuse.includes(topic) ? 0x87 : 1 })),
    );
  }
  unsubscribe(filters: string[], cb: (err?: Error | null) => void) {
    this.unsubscribed.push(filters);
    cb(null);
  }
}

test('filters added while offline are subscribed on connect, and all of them again on every reconnect', (t) => {
  const reg = new SubscriptionRegistry(createMemoryLogger());
  const got: string[] = [];
  const h: MessageHandler = (topic) => got.push(topic);
  reg.add(['a/+/cmd/+', 'fleet/cmd/+'], h);
  reg.add(['ota/jobs'], h);
  t.deepEqual(
    reg.state().map((s) => s.state),
    ['pending', 'pending', 'pending'],
  );
  const first = new RecordingClient();
  reg.connected(first);
  t.deepEqual(first.subscribed, [['a/+/cmd/+', 'fleet/cmd/+', 'ota/jobs']]);
  t.true(reg.state().every((s) => s.state === 'active'));
  // Added while connected: subscribed at once, alone.
  reg.add(['late/topic'], h);
  t.deepEqual(first.subscribed.at(-1), ['late/topic']);
  reg.disconnected();
  t.true(reg.state().every((s) => s.state === 'pending'));
  // A new connection, whatever the broker says about its session: everything again.
  const second = new RecordingClient();
  reg.connected(second);
  t.deepEqual(second.subscribed, [['a/+/cmd/+', 'fleet/cmd/+', 'ota/jobs', 'late/topic']]);
  t.true(reg.dispatch('a/x/cmd/ping', Buffer.from('{}'), {}));
  t.true(reg.dispatch('ota/jobs', Buffer.from('{}'), {}));
  t.false(reg.dispatch('other/topic', Buffer.from('{}'), {}));
  t.deepEqual(got, ['a/x/cmd/ping', 'ota/jobs']);
});

test('each filter is subscribed at its QoS, on every connection; a QoS 1 adder raises a QoS 0 filter', (t) => {
  const reg = new SubscriptionRegistry(createMemoryLogger());
  const h: MessageHandler = () => {};
  reg.add(['own/cmd/+'], h, 1);
  reg.add(['fleet/cmd/+', 'jobs/retained'], h, 0);
  reg.add(['default'], h);
  const first = new RecordingClient();
  reg.connected(first);
  t.deepEqual(first.requested, [
    { 'own/cmd/+': { qos: 1 }, 'fleet/cmd/+': { qos: 0 }, 'jobs/retained': { qos: 0 }, default: { qos: 1 } },
  ]);
  t.deepEqual(
    reg.state().map((s) => [s.filter, s.qos]),
    [
      ['own/cmd/+', 1],
      ['fleet/cmd/+', 0],
      ['jobs/retained', 0],
      ['default', 1],
    ],
  );
  // A second handler at QoS 0 changes nothing; one at QoS 1 subscribes the filter again at 1.
  reg.add(['own/cmd/+'], h, 0);
  t.is(first.requested.length, 1);
  reg.add(['jobs/retained'], () => {}, 1);
  t.deepEqual(first.requested.at(-1), { 'jobs/retained': { qos: 1 } });
  reg.disconnected();
  const second = new RecordingClient();
  reg.connected(second);
  t.deepEqual(second.requested, [
    { 'own/cmd/+': { qos: 1 }, 'fleet/cmd/+': { qos: 0 }, 'jobs/retained': { qos: 1 }, default: { qos: 1 } },
  ]);
});

test('a shared filter stays until its last handler goes; removal unsubscribes once', (t) => {
  const reg = new SubscriptionRegistry(createMemoryLogger());
  const client = new RecordingClient();
  reg.connected(client);
  const seen: string[] = [];
  const offA = reg.add(['x/#'], () => seen.push('A'));
  const offB = reg.add(['x/#'], () => seen.push('B'));
  t.deepEqual(client.subscribed, [['x/#']], 'subscribed once');
  reg.dispatch('x/1', Buffer.alloc(0), {});
  offA();
  offA();
  t.deepEqual(client.unsubscribed, []);
  reg.dispatch('x/2', Buffer.alloc(0), {});
  offB();
  t.deepEqual(client.unsubscribed, [['x/#']]);
  t.false(reg.dispatch('x/3', Buffer.alloc(0), {}));
  t.deepEqual(seen, ['A', 'B', 'B']);
});

test('a refused subscription is reported as denied; a throwing handler does not stop the others', (t) => {
  const reg = new SubscriptionRegistry(createMemoryLogger());
  const seen: string[] = [];
  reg.add(['ok/t'], () => {
    throw new Error('bug');
  });
  reg.add(['ok/+'], (topic) => seen.push(topic));
  reg.add(['denied/t'], () => {});
  reg.connected(new RecordingClient(['denied/t']));
  t.like(
    reg.state().find((s) => s.filter === 'denied/t'),
    { state: 'denied', error: 'the broker refused the subscription (SUBACK 0x87)' },
  );
  t.true(reg.dispatch('ok/t', Buffer.alloc(0), {}));
  t.deepEqual(seen, ['ok/t']);
});

test('a refused filter is asked for again on the same connection until the broker grants it', async (t) => {
  // A NATS node refuses with 0x80 while JetStream cannot create the consumer, and grants the same filter later.
  const reg = new SubscriptionRegistry(createMemoryLogger(), { minMs: 5, maxMs: 20 });
  reg.add(['ok/t', 'flaky/t'], () => {});
  let refusals = 3;
  const asked: string[][] = [];
  const client: SubscribingClient = {
    subscribe(filters, cb) {
      const topics = Object.keys(filters);
      asked.push(topics);
      cb(
        null,
        topics.map((topic) => ({ topic, qos: topic === 'flaky/t' && refusals-- > 0 ? 0x80 : 1 })),
      );
    },
    unsubscribe: (_f, cb) => cb(null),
  };
  await reg.connected(client);
  t.is(reg.state().find((s) => s.filter === 'flaky/t')?.state, 'denied');
  while (reg.state().some((s) => s.state !== 'active')) await new Promise((r) => setTimeout(r, 5));
  t.deepEqual(
    asked,
    [['ok/t', 'flaky/t'], ['flaky/t'], ['flaky/t'], ['flaky/t']],
    'only the refused filter again',
  );
});

test('a filter added with refresh is subscribed again while connected, alone; not once disconnected', async (t) => {
  const reg = new SubscriptionRegistry(createMemoryLogger());
  reg.add(['own/cmd/+'], () => {}, 1);
  reg.add(['jobs/retained', 'tag/jobs'], () => {}, 0, { everyMs: 10 });
  const client = new RecordingClient();
  await reg.connected(client);
  while (client.requested.length < 3) await new Promise((r) => setTimeout(r, 5));
  t.deepEqual(client.requested.slice(0, 3), [
    { 'own/cmd/+': { qos: 1 }, 'jobs/retained': { qos: 0 }, 'tag/jobs': { qos: 0 } },
    { 'jobs/retained': { qos: 0 }, 'tag/jobs': { qos: 0 } },
    { 'jobs/retained': { qos: 0 }, 'tag/jobs': { qos: 0 } },
  ]);
  reg.disconnected();
  const asked = client.requested.length;
  await new Promise((r) => setTimeout(r, 50));
  t.is(client.requested.length, asked, 'nothing on a connection that is gone');
});

test('MQTT filter matching', (t) => {
  t.true(topicMatches('a/+/c', 'a/b/c'));
  t.false(topicMatches('a/+/c', 'a/b/c/d'));
  t.true(topicMatches('a/#', 'a'));
  t.true(topicMatches('a/#', 'a/b/c'));
  t.false(topicMatches('+/x', '$SYS/x'));
  t.true(topicMatches('homeassistant/status', 'homeassistant/status'));
  t.false(topicMatches('a/b', 'a/b/c'));
});

test('device ids map to one topic segment everywhere, one-to-one and reversible', (t) => {
  const cases: [string, string][] = [
    ['rk5b-01', 'rk5b-01'],
    ['edge_7', 'edge_7'],
    ['edge-7.lab', 'edge-7_2Elab'],
    ['rk3588:01', 'rk3588_3A01'],
    ['a_2E', 'a_5F2E'], // would read as an escaped "." otherwise
    ['a.b_c:d-e', 'a_2Eb_c_3Ad-e'],
    ['_AB', '_5FAB'],
    ['_ab', '_ab'], // escapes are uppercase hex only
  ];
  for (const [id, segment] of cases) {
    t.is(topicSegment(id), segment, id);
    t.is(deviceIdOfSegment(segment), id, segment);
    t.regex(segment, /^[A-Za-z0-9_-]+$/);
    t.is(deviceTopics(id).root, `mnn-edge/${segment}`);
    t.is(deviceIdOf(`mnn-edge/${segment}/status`), id);
  }
  // One-to-one over every short id of the interesting characters.
  const alphabet = ['a', 'A', '2', 'E', '_', '.', ':', '-'];
  const seen = new Map<string, string>();
  const walk = (prefix: string, depth: number) => {
    if (prefix) {
      const seg = topicSegment(prefix);
      t.is(seen.get(seg) ?? prefix, prefix, `${prefix} and ${seen.get(seg)} share ${seg}`);
      seen.set(seg, prefix);
      if (deviceIdOfSegment(seg) !== prefix) t.fail(`${prefix} → ${seg} does not reverse`);
    }
    if (depth > 0) for (const c of alphabet) walk(prefix + c, depth - 1);
  };
  walk('', 4);
  t.is(deviceIdOfSegment('a_2e'), 'a_2e');
  t.is(deviceIdOfSegment('a.b'), undefined, 'not a segment');
  t.is(deviceIdOfSegment('a_5Fb'), undefined, 'not the canonical form of a_b');
  t.throws(() => topicSegment('fleet'));
  t.throws(() => topicSegment('a/b'));
});
