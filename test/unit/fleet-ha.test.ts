import test from 'ava';
import { buildHaDiscovery, haDiscoveryTopic, haObjectId } from '../../agent/fleet/ha-discovery.js';

// Checks against Home Assistant's documented MQTT discovery requirements (device-based discovery):
// - the payload has `dev` (device) with identifiers, `o` (origin) with `name`, and `cmps` (components);
// - every component has `p` (platform) and a `unique_id`;
// - sensor: `state_topic` is required; select: `command_topic` and `options` are required;
// - update: reads `installed_version`/`latest_version` from a JSON state; availability entries need `topic`;
// - the discovery topic is `<prefix>/device/<object_id>/config` with object_id in [a-zA-Z0-9_-].

const input = {
  deviceId: 'rk3588:01',
  agentVersion: '0.1.0',
  model: 'Radxa ROCK 5B',
  hwVersion: 'rk3588',
  temperatureMetrics: ['temp.soc_c', 'temp.npu_c'],
  slots: [
    { name: 'chat', options: ['qwen-int4@cpu', 'qwen-int4@opencl'] },
    { name: 'vision', options: [] },
  ],
};

test('discovery topic and object id follow Home Assistant rules', (t) => {
  t.is(haDiscoveryTopic('rk3588:01'), 'homeassistant/device/rk3588_01/config');
  t.regex(haObjectId('a.b c/d'), /^[A-Za-z0-9_-]+$/);
});

test('device-level config has device, origin and components with the required fields', (t) => {
  const cfg = buildHaDiscovery(input);
  t.deepEqual(cfg.dev.ids, ['mnn-edge:rk3588:01']);
  t.is(cfg.dev.mdl, 'Radxa ROCK 5B');
  t.is(cfg.dev.sw, '0.1.0');
  t.is(cfg.o.name, 'mnn-edge');
  t.is(cfg.o.sw, '0.1.0');
  t.truthy(cfg.o.url);
  const components = Object.entries(cfg.cmps);
  const ids = new Set<string>();
  for (const [key, c] of components) {
    t.truthy(c.p, `${key} has a platform`);
    t.is(c.unique_id, key);
    t.regex(c.unique_id, /^[A-Za-z0-9_-]+$/);
    t.false(ids.has(c.unique_id), 'unique ids are unique');
    ids.add(c.unique_id);
    t.truthy(c['name'], `${key} has a name`);
    if (c.p === 'sensor') t.regex(String(c['state_topic']), /^mnn-edge\/rk3588:01\/telemetry$/);
    if (c.p === 'select') {
      t.true(typeof c['command_topic'] === 'string');
      t.true(Array.isArray(c['options']) && (c['options'] as unknown[]).length > 0);
    }
  }
  for (const a of cfg.availability) t.truthy(a.topic);
  t.is(cfg.availability[0]!.topic, 'mnn-edge/rk3588:01/status');
});

test('entities: CPU, memory, temperature per zone, tokens/s and active model per slot, a select, a models update', (t) => {
  const cfg = buildHaDiscovery(input);
  const byPlatform = (p: string) => Object.values(cfg.cmps).filter((c) => c.p === p);
  const sensors = byPlatform('sensor').map((c) => c['name']);
  t.deepEqual(sensors, [
    'CPU load',
    'Memory used',
    'Temperature soc',
    'Temperature npu',
    'chat tokens/s',
    'chat active model',
    'vision tokens/s',
    'vision active model',
  ]);
  const temp = byPlatform('sensor').find((c) => c['name'] === 'Temperature soc')!;
  t.is(temp['device_class'], 'temperature');
  t.is(temp['unit_of_measurement'], '°C');
  t.is(temp['value_template'], "{{ value_json.metrics['temp.soc_c'].mean | default(none) }}");
  const selects = byPlatform('select');
  t.is(selects.length, 1, 'no select for a slot without choices');
  t.is(selects[0]!['command_topic'], 'mnn-edge/rk3588:01/cmd/set-placement');
  t.deepEqual(selects[0]!['options'], ['qwen-int4@cpu', 'qwen-int4@opencl']);
  t.is(
    selects[0]!['command_template'],
    `{"params":{"slot":"chat","variant":"{{ value.split('@')[0] }}","backend":"{{ value.split('@')[1] }}"}}`,
  );
  const updates = byPlatform('update');
  t.is(updates.length, 1);
  t.is(updates[0]!['state_topic'], 'mnn-edge/rk3588:01/models');
  t.regex(String(updates[0]!['value_template']), /installed_version.*latest_version.*to_json/);
});

test('slot names cannot break out of the templates', (t) => {
  const cfg = buildHaDiscovery({ ...input, slots: [{ name: "it's", options: ['a@b'] }] });
  const model = Object.values(cfg.cmps).find((c) => c['name'] === "it's active model")!;
  t.is(model['value_template'], "{{ value_json.slots['it\\'s'].model | default('none') }}");
  const select = Object.values(cfg.cmps).find((c) => c.p === 'select')!;
  t.notThrows(() => JSON.parse(String(select['command_template']).replace(/\{\{.*?\}\}/g, 'x')));
});
