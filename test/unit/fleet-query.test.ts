import test from 'ava';
import type { DeviceSummary } from '../../agent/operator/fleet/operator.js';
import { addressed, filterDevices, sortDevices } from '../../agent/operator/fleet/query.js';

const dev = (
  id: string,
  state: 'online' | 'offline',
  family: string,
  tags: string[],
  model?: string,
  ts?: number,
) =>
  ({
    deviceId: id,
    status: { v: 1, state, deviceId: id, tags, board: { family } },
    documents: model ? { models: { v: 1, deviceId: id, ts: 0, data: { installedVersion: model } } } : {},
    ...(ts !== undefined ? { lastTelemetry: { ts } } : {}),
  }) as unknown as DeviceSummary;

const fleet = [
  dev('c', 'online', 'rk3588', ['lab'], 'tiny-llm@2.0.0', 900),
  dev('a', 'offline', 'jetson', ['lab', 'shop'], 'tiny-llm@1.0.0', 100),
  dev('b', 'online', 'jetson', ['shop']),
];

test('fleet ls filters by tag, board, online and model, and sorts', (t) => {
  const ids = (ds: DeviceSummary[]) => ds.map((d) => d.deviceId);
  t.deepEqual(ids(filterDevices(fleet, { tag: 'lab' })), ['c', 'a']);
  t.deepEqual(ids(filterDevices(fleet, { board: 'jetson', online: true })), ['b']);
  t.deepEqual(ids(filterDevices(fleet, { model: 'tiny-llm' })), ['c', 'a']);
  t.deepEqual(ids(filterDevices(fleet, { model: 'tiny-llm@1.0.0' })), ['a']);
  t.deepEqual(ids(sortDevices(fleet, 'id', 1000)), ['a', 'b', 'c']);
  t.deepEqual(ids(sortDevices(fleet, 'telemetry-age', 1000)), ['c', 'a', 'b']);
  t.deepEqual(ids(sortDevices(fleet, 'board', 1000)), ['a', 'b', 'c']);
});

test('a fleet command addresses the online devices its selector matches', (t) => {
  t.deepEqual(addressed(fleet, { tags: ['shop'] }), ['b']);
  t.deepEqual(addressed(fleet, {}), ['c', 'b']);
  t.deepEqual(addressed(fleet, { boardFamilies: ['rk3588'], tags: ['lab'] }), ['c']);
});
