import { deviceTopics, topicSegment } from '../../lib/topics.js';

// Home Assistant MQTT discovery, device-based form: one retained config message at
// `homeassistant/device/<segment>/config` describing the device (`dev`), who made the integration (`o`, origin) and
// all its entities (`cmps`). The entities read the agent's own topics (telemetry, status, documents), so Home
// Assistant needs nothing beyond the contract. Re-announced when Home Assistant says `homeassistant/status`
// is `online` (it forgets non-retained state on restart), and whenever the set of entities changes: an entity
// that went away (a slot no longer placed) is sent once as its platform alone, which is how device-based
// discovery removes a component.

export const HA_DISCOVERY_PREFIX = 'homeassistant';
export const HA_STATUS_TOPIC = `${HA_DISCOVERY_PREFIX}/status`;

export interface HaSlot {
  name: string;
  /** The board's usable backends: the select's choices (after `auto`); empty: no select for this slot. */
  backends: readonly string[];
}

/** The select's choice that clears the operator's pin (the planner decides again). */
export const HA_AUTO_BACKEND = 'auto';

/** A slot's model select: the choices (`none`, built-ins, the installed models whose task fits). */
export interface HaModelSlot {
  slot: string;
  options: readonly string[];
}

/** The command Home Assistant's model select sends; the change log records it as made by "home assistant". */
export const HA_SLOT_MODEL_COMMAND = 'select-slot-model';

export interface HaDiscoveryInput {
  deviceId: string;
  deviceName?: string;
  manufacturer?: string;
  model?: string;
  agentVersion: string;
  hwVersion?: string;
  /** Metric names of thermal zones, e.g. `temp.cpu-0-0-0_c`. */
  temperatureMetrics: readonly string[];
  slots: readonly HaSlot[];
  /** One model select per slot that has a choice (reads the retained `config` document). */
  modelSlots?: readonly HaModelSlot[];
}

export type HaComponent = Record<string, unknown> & { p: string; unique_id: string };

export interface HaDeviceConfig {
  dev: { ids: string[]; name: string; mf?: string; mdl?: string; sw?: string; hw?: string };
  o: { name: string; sw: string; url: string };
  cmps: Record<string, HaComponent>;
  availability: {
    topic: string;
    value_template: string;
    payload_available: string;
    payload_not_available: string;
  }[];
  qos: number;
}

/** The device's topic segment, which is also a valid Home Assistant object id ([A-Za-z0-9_-]). */
export function haDiscoveryTopic(deviceId: string): string {
  return `${HA_DISCOVERY_PREFIX}/device/${topicSegment(deviceId)}/config`;
}

/** For names inside unique ids (slots, thermal zones): Home Assistant allows [a-zA-Z0-9_-] only. */
export function haObjectId(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Components announced before but absent now, in Home Assistant's removal form (the platform alone). */
export function haRemovals(
  previous: HaDeviceConfig | undefined,
  next: HaDeviceConfig,
): Record<string, { p: string }> {
  const out: Record<string, { p: string }> = {};
  for (const [id, c] of Object.entries(previous?.cmps ?? {})) if (!(id in next.cmps)) out[id] = { p: c.p };
  return out;
}

function jinjaString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function metricMean(metric: string): string {
  return `{{ value_json.metrics[${jinjaString(metric)}].mean | default(none) }}`;
}

type Topics = ReturnType<typeof deviceTopics>;

/** A slot's backend pin: `set-placement` takes {slot, pin}; a backend pins it, `auto` (pin null) hands it back to
 *  the planner. */
function placementSelect(t: Topics, slot: HaSlot): HaComponent {
  const unique_id = `mnn_edge_${t.segment}_slot_${haObjectId(slot.name)}_placement`;
  const s = jinjaString(slot.name);
  const slotJson = JSON.stringify(slot.name);
  return {
    p: 'select',
    unique_id,
    name: `${slot.name} backend pin`,
    options: [HA_AUTO_BACKEND, ...slot.backends],
    state_topic: t.telemetry,
    value_template: `{{ value_json.slots[${s}].backend | default('${HA_AUTO_BACKEND}') }}`,
    command_topic: t.command('set-placement'),
    command_template: `{% if value == '${HA_AUTO_BACKEND}' %}{"params":{"slot":${slotJson},"pin":null}}{% else %}{"params":{"slot":${slotJson},"pin":{"backend":"{{ value }}"}}}{% endif %}`,
  };
}

/** A slot's model select: the slot as configured (the `config` document), shown as slotChoiceOf() does; choosing
 *  sends the slot-model command. */
function modelSelect(t: Topics, m: HaModelSlot): HaComponent {
  const unique_id = `mnn_edge_${t.segment}_slot_${haObjectId(m.slot)}_model_select`;
  const s = jinjaString(m.slot);
  return {
    p: 'select',
    unique_id,
    name: `${m.slot} model`,
    icon: 'mdi:brain',
    options: [...m.options],
    state_topic: t.document('config'),
    value_template:
      `{% set c = (value_json.data.effective.slots | default({}))[${s}] | default({}) %}` +
      '{% if c.enabled is defined and not c.enabled %}none{% elif c.builtin is defined %}{{ c.builtin }} (built-in)' +
      '{% elif c.model is defined %}{{ c.model }}{% else %}none{% endif %}',
    command_topic: t.command(HA_SLOT_MODEL_COMMAND),
    command_template: `{"params":{"slot":${JSON.stringify(m.slot)},"model":{{ value | tojson }}}}`,
  };
}

export function buildHaDiscovery(input: HaDiscoveryInput): HaDeviceConfig {
  const t = deviceTopics(input.deviceId);
  const oid = t.segment;
  const cmps: Record<string, HaComponent> = {};
  const sensor = (key: string, fields: Record<string, unknown>) => {
    const unique_id = `mnn_edge_${oid}_${haObjectId(key)}`;
    cmps[unique_id] = { p: 'sensor', unique_id, state_topic: t.telemetry, ...fields };
  };
  sensor('cpu_load', {
    name: 'CPU load',
    unit_of_measurement: '%',
    state_class: 'measurement',
    value_template: metricMean('cpu.load_pct'),
  });
  sensor('memory_used', {
    name: 'Memory used',
    unit_of_measurement: '%',
    state_class: 'measurement',
    value_template: metricMean('mem.used_pct'),
  });
  for (const metric of input.temperatureMetrics) {
    const zone = metric.replace(/^temp\./, '').replace(/_c$/, '');
    sensor(`temp_${zone}`, {
      name: `Temperature ${zone}`,
      device_class: 'temperature',
      unit_of_measurement: '°C',
      state_class: 'measurement',
      value_template: metricMean(metric),
    });
  }
  for (const slot of input.slots) {
    const s = jinjaString(slot.name);
    sensor(`slot_${slot.name}_tokens_per_sec`, {
      name: `${slot.name} tokens/s`,
      unit_of_measurement: 'tokens/s',
      state_class: 'measurement',
      // The slot's last rate, 0 before its first generation; the attribute says whether one ran in the interval.
      value_template: `{{ value_json.slots[${s}].tokensPerSec | default(0) }}`,
      json_attributes_topic: t.telemetry,
      json_attributes_template: `{{ {'generation_in_interval': (value_json.slots[${s}].intervalRequests | default(0)) > 0} | tojson }}`,
    });
    sensor(`slot_${slot.name}_model`, {
      name: `${slot.name} active model`,
      icon: 'mdi:brain',
      value_template: `{{ value_json.slots[${s}].model | default('none') }}`,
    });
    sensor(`slot_${slot.name}_backend`, {
      name: `${slot.name} backend`,
      icon: 'mdi:chip',
      value_template: `{{ value_json.slots[${s}].backend | default('none') }}`,
    });
    if (slot.backends.length > 0) {
      const select = placementSelect(t, slot);
      cmps[select.unique_id] = select;
    }
  }
  for (const m of input.modelSlots ?? []) {
    const select = modelSelect(t, m);
    cmps[select.unique_id] = select;
  }
  const modelsUid = `mnn_edge_${oid}_models`;
  cmps[modelsUid] = {
    p: 'update',
    unique_id: modelsUid,
    name: 'Models',
    device_class: 'firmware',
    state_topic: t.document('models'),
    // The models document carries the installed and the newest available package versions.
    value_template:
      "{{ {'installed_version': value_json.data.installedVersion | default(''), 'latest_version': value_json.data.latestVersion | default(value_json.data.installedVersion | default(''))} | to_json }}",
  };
  return {
    dev: {
      ids: [`mnn-edge:${input.deviceId}`],
      name: input.deviceName ?? `mnn-edge ${input.deviceId}`,
      ...(input.manufacturer ? { mf: input.manufacturer } : {}),
      ...(input.model ? { mdl: input.model } : {}),
      sw: input.agentVersion,
      ...(input.hwVersion ? { hw: input.hwVersion } : {}),
    },
    o: { name: 'mnn-edge', sw: input.agentVersion, url: 'https://github.com/mnn-edge/mnn-edge' },
    cmps,
    availability: [
      {
        topic: t.status,
        value_template: '{{ value_json.state }}',
        payload_available: 'online',
        payload_not_available: 'offline',
      },
    ],
    qos: 1,
  };
}
