import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { normaliseSerial, resolveDeviceIdentity } from '../../agent/identity/device-identity.js';
import { socFixturesDir } from '../helpers/paths.js';

function tempTree(files: Record<string, string>): { root: string; dataDir: string; cleanup(): void } {
  const base = mkdtempSync(join(tmpdir(), 'mnn-edge-identity-'));
  const root = join(base, 'root');
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  mkdirSync(root, { recursive: true });
  return { root, dataDir: join(base, 'data'), cleanup: () => rmSync(base, { recursive: true, force: true }) };
}

test('deviceId from config wins over the board serial', (t) => {
  const tree = tempTree({ 'sys/devices/soc0/serial_number': '1234abcd\n' });
  t.teardown(tree.cleanup);
  const id = resolveDeviceIdentity({
    ...tree,
    config: { deviceId: 'kiosk-7', tags: ['lobby', 'lobby', 'eu'] },
  });
  t.is(id.deviceId, 'kiosk-7');
  t.is(id.source, 'config');
  t.deepEqual(id.tags, ['lobby', 'eu']);
});

test('a malformed configured deviceId is refused with the expected form', (t) => {
  const tree = tempTree({});
  t.teardown(tree.cleanup);
  t.throws(() => resolveDeviceIdentity({ ...tree, config: { deviceId: 'has space' } }), {
    message: 'Expected 1-64 characters of A-Z a-z 0-9 _ . : - for deviceId but received "has space"',
  });
});

test('device-tree serial-number is NUL-terminated and preferred over soc0', (t) => {
  const tree = tempTree({
    'sys/firmware/devicetree/base/serial-number': 'c4a1e0ff39c1\0',
    'sys/devices/soc0/serial_number': '99999\n',
  });
  t.teardown(tree.cleanup);
  const id = resolveDeviceIdentity({ ...tree, config: {} });
  t.is(id.deviceId, 'c4a1e0ff39c1');
  t.is(id.source, 'device-tree-serial');
  t.deepEqual(id.evidence, {
    path: '/sys/firmware/devicetree/base/serial-number',
    value: 'c4a1e0ff39c1',
    note: 'board serial number',
  });
});

test('soc0 serial_number is used when the device tree has none', (t) => {
  const tree = tempTree({ 'sys/devices/soc0/serial_number': '3265487612\n' });
  t.teardown(tree.cleanup);
  const id = resolveDeviceIdentity({ ...tree, config: {} });
  t.is(id.deviceId, '3265487612');
  t.is(id.source, 'soc0-serial');
  t.is(id.evidence.path, '/sys/devices/soc0/serial_number');
});

test('placeholder serials are not identities', (t) => {
  for (const raw of ['0000000000000000\0', 'FFFFFFFF\n', 'Unknown\n', '\0', '', 'To Be Filled By O.E.M.']) {
    t.is(normaliseSerial(raw), undefined, JSON.stringify(raw));
  }
  t.is(normaliseSerial('  abc-123\0\0'), 'abc-123');
});

test('without a serial a UUID is generated once, stored durably and reused; machine-id is never read', (t) => {
  const tree = tempTree({
    'sys/devices/soc0/serial_number': '0000000000000000\n',
    'etc/machine-id': 'baked0into0the0image0000000000000\n',
  });
  t.teardown(tree.cleanup);
  const first = resolveDeviceIdentity({ ...tree, config: {}, generateId: () => 'fresh-uuid-1' });
  t.is(first.deviceId, 'fresh-uuid-1');
  t.is(first.source, 'generated');
  t.is(
    first.evidence.note,
    'generated on first start (placeholder serials ignored: /sys/devices/soc0/serial_number "0000000000000000")',
  );
  t.is(readFileSync(join(tree.dataDir, 'device-id'), 'utf8'), 'fresh-uuid-1\n');
  const second = resolveDeviceIdentity({
    ...tree,
    config: {},
    generateId: () => t.fail('must not mint a second id') as never,
  });
  t.is(second.deviceId, 'fresh-uuid-1');
  t.is(second.source, 'stored');
});

test('a corrupted stored id is an error that says how to recover', (t) => {
  const tree = tempTree({});
  t.teardown(tree.cleanup);
  mkdirSync(tree.dataDir, { recursive: true });
  writeFileSync(join(tree.dataDir, 'device-id'), 'not valid!\n');
  t.throws(() => resolveDeviceIdentity({ ...tree, config: {} }), {
    message: `Stored device id in ${join(tree.dataDir, 'device-id')} is malformed ("not valid!"); fix or delete the file`,
  });
});

test('a shared board fixture without a serial falls back to a generated id', (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mnn-edge-identity-fx-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const id = resolveDeviceIdentity({
    root: join(socFixturesDir, 'rpi5-bcm2712'),
    dataDir,
    config: { tags: ['pi'] },
    generateId: () => 'pi-uuid',
  });
  t.is(id.deviceId, 'pi-uuid');
  t.deepEqual(id.tags, ['pi']);
});
