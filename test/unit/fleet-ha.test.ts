import test from 'ava';
import {
  buildHaDiscovery,
  haDiscoveryTopic,
  haObjectId,
  haRemovals,
} from '../../agent/fleet/ha-discovery.js';

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
    { name: 'voice.llm', backends: ['cpu', 'opencl'] },
    { name: 'vision.vlm', backends: [] },
  ],
};

test('discovery topic and object id follow Home Assistant rules', (t) => {
  // The device's topic segment (the same as in mnn-edge/<segment>/… and the ACL's %u), one-to-one.
  t.is(haDiscoveryTopic('rk3588:01'), 'homeassistant/device/rk3588_3A01/config');
  t.is(haDiscoveryTopic('edge-7.lab'), 'homeassistant/device/edge-7_2Elab/config');
  t.is(haDiscoveryTopic('edge_7'), 'homeassistant/device/edge_7/config');
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
    if (c.p === 'sensor') t.is(c['state_topic'], 'mnn-edge/rk3588_3A01/telemetry');
    if (c.p === 'select') {
      t.true(typeof c['command_topic'] === 'string');
      t.true(Array.isArray(c['options']) && (c['options'] as unknown[]).length > 0);
    }
  }
  for (const a of cfg.availability) t.truthy(a.topic);
  t.is(cfg.availability[0]!.topic, 'mnn-edge/rk3588_3A01/status');
});

test('entities: CPU, memory, temperature per zone, tokens/s, model and backend per slot, a select, a models update', (t) => {
  const cfg = buildHaDiscovery(input);
  const byPlatform = (p: string) => Object.values(cfg.cmps).filter((c) => c.p === p);
  const sensors = byPlatform('sensor').map((c) => c['name']);
  t.deepEqual(sensors, [
    'CPU load',
    'Memory used',
    'Temperature soc',
    'Temperature npu',
    'voice.llm tokens/s',
    'voice.llm active model',
    'voice.llm backend',
    'vision.vlm tokens/s',
    'vision.vlm active model',
    'vision.vlm backend',
  ]);
  const tps = byPlatform('sensor').find((c) => c['name'] === 'voice.llm tokens/s')!;
  // Never `None`: the telemetry message carries the slot's last rate (0 before any generation) for every slot.
  t.is(tps['value_template'], "{{ value_json.slots['voice.llm'].tokensPerSec | default(0) }}");
  t.is(tps['json_attributes_topic'], tps['state_topic']);
  t.regex(String(tps['json_attributes_template']), /generation_in_interval.*intervalRequests.*tojson/);
  const temp = byPlatform('sensor').find((c) => c['name'] === 'Temperature soc')!;
  t.is(temp['device_class'], 'temperature');
  t.is(temp['unit_of_measurement'], '°C');
  t.is(temp['value_template'], "{{ value_json.metrics['temp.soc_c'].mean | default(none) }}");
  const selects = byPlatform('select');
  t.is(selects.length, 1, 'no select for a slot without usable backends');
  t.is(selects[0]!['command_topic'], 'mnn-edge/rk3588_3A01/cmd/set-placement');
  t.deepEqual(selects[0]!['options'], ['auto', 'cpu', 'opencl']);
  // What Home Assistant renders for each choice is a set-placement request the command accepts: {slot, pin}.
  const render = (value: string) =>
    JSON.parse(
      String(selects[0]!['command_template'])
        .replace(
          /\{% if value == 'auto' %\}(.*)\{% else %\}(.*)\{% endif %\}/,
          value === 'auto' ? '$1' : '$2',
        )
        .replace('{{ value }}', value),
    );
  t.deepEqual(render('opencl'), { params: { slot: 'voice.llm', pin: { backend: 'opencl' } } });
  t.deepEqual(render('auto'), { params: { slot: 'voice.llm', pin: null } });
  const updates = byPlatform('update');
  t.is(updates.length, 1);
  t.is(updates[0]!['state_topic'], 'mnn-edge/rk3588_3A01/models');
  t.regex(String(updates[0]!['value_template']), /installed_version.*latest_version.*to_json/);
});

test('slot names cannot break out of the templates', (t) => {
  const cfg = buildHaDiscovery({ ...input, slots: [{ name: "it's", backends: ['cpu'] }] });
  const model = Object.values(cfg.cmps).find((c) => c['name'] === "it's active model")!;
  t.is(model['value_template'], "{{ value_json.slots['it\\'s'].model | default('none') }}");
  const select = Object.values(cfg.cmps).find((c) => c.p === 'select')!;
  t.notThrows(() =>
    JSON.parse(
      String(select['command_template'])
        .replace(/\{%.*?%\}/g, '')
        .replace(/\{\{.*?\}\}/g, 'x')
        .replace(/\}\{/, '},{')
        .replace(/^/, '[')
        .concat(']'),
    ),
  );
});

test('a slot that goes away is removed from Home Assistant: its components are sent once as the platform alone', (t) => {
  const before = buildHaDiscovery(input);
  const after = buildHaDiscovery({ ...input, slots: [] });
  const removed = haRemovals(before, after);
  const gone = Object.keys(before.cmps).filter((id) => !(id in after.cmps));
  t.true(gone.length >= 7, 'three sensors per slot and the select');
  t.deepEqual(Object.keys(removed).sort(), gone.sort());
  for (const [id, c] of Object.entries(removed)) t.deepEqual(c, { p: before.cmps[id]!.p });
  t.deepEqual(haRemovals(after, after), {});
  t.deepEqual(haRemovals(undefined, before), {});
});
