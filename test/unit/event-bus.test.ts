// The cross-module event bus: typed payloads, listeners owned by a module and dropped with it, and one
// listener's exception kept from the others.
import test from 'ava';
import { EventBus } from '../../lib/event-bus.js';

type Events = {
  placement: { revision: number; reason: string };
  'device.event': { type: string; data: Record<string, unknown> };
};

test('a payload reaches every listener of its event, in registration order', (t) => {
  const bus = new EventBus<Events>();
  const seen: string[] = [];
  bus.on('documents', 'placement', (p) => seen.push(`documents ${p.revision} ${p.reason}`));
  bus.on('fleet', 'placement', (p) => seen.push(`fleet ${p.revision}`));
  bus.on('fleet', 'device.event', (e) => seen.push(`event ${e.type}`));
  bus.emit('placement', { revision: 3, reason: 'replan' });
  t.deepEqual(seen, ['documents 3 replan', 'fleet 3']);
  // @ts-expect-error: a placement payload needs its revision and reason
  bus.emit('placement', { revision: 4 });
  // @ts-expect-error: no such event
  bus.on('x', 'no-such-event', () => {});
});

test('removeOwner drops exactly the listeners that module registered, for every event', (t) => {
  const bus = new EventBus<Events>();
  const seen: string[] = [];
  bus.on('documents', 'placement', () => seen.push('documents'));
  bus.on('fleet', 'placement', () => seen.push('fleet'));
  bus.on('fleet', 'device.event', () => seen.push('fleet event'));
  t.is(bus.listenerCount(undefined, 'fleet'), 2);
  bus.removeOwner('fleet');
  t.is(bus.listenerCount(undefined, 'fleet'), 0);
  t.is(bus.listenerCount('placement'), 1);
  bus.emit('placement', { revision: 1, reason: 'r' });
  bus.emit('device.event', { type: 'x', data: {} });
  t.deepEqual(seen, ['documents']);
  bus.removeOwner('nobody');
  t.is(bus.listenerCount(), 1);
});

test('the remover returned by on() drops only that listener', (t) => {
  const bus = new EventBus<Events>();
  const seen: number[] = [];
  const off = bus.on('a', 'placement', () => seen.push(1));
  bus.on('a', 'placement', () => seen.push(2));
  off();
  off();
  bus.emit('placement', { revision: 1, reason: 'r' });
  t.deepEqual(seen, [2]);
});

test('a listener that throws is reported with its owner; the others still run', (t) => {
  const errors: string[] = [];
  const bus = new EventBus<Events>((event, owner, err) =>
    errors.push(`${event} ${owner} ${(err as Error).message}`),
  );
  const seen: string[] = [];
  bus.on('broken', 'placement', () => {
    throw new Error('boom');
  });
  bus.on('documents', 'placement', () => seen.push('documents'));
  t.notThrows(() => bus.emit('placement', { revision: 1, reason: 'r' }));
  t.deepEqual(seen, ['documents']);
  t.deepEqual(errors, ['placement broken boom']);
});

test('a listener that removes its owner while the event is delivered does not make the next one miss it', (t) => {
  const bus = new EventBus<Events>();
  const seen: string[] = [];
  bus.on('a', 'placement', () => {
    seen.push('a');
    bus.removeOwner('a');
  });
  bus.on('b', 'placement', () => seen.push('b'));
  bus.emit('placement', { revision: 1, reason: 'r' });
  bus.emit('placement', { revision: 2, reason: 'r' });
  t.deepEqual(seen, ['a', 'b', 'b']);
});
