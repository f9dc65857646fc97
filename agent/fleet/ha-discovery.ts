import { deviceTopics } from './topics.js';

// Home Assistant MQTT discovery, device-based form: one retained config message at
// `homeassistant/device/<id>/config` describing the device (`dev`), who made the integration (`o`, origin) and
// all its entities (`cmps`). The entities read the agent's own topics (telemetry, status, documents), so Home
// Assistant needs nothing beyond the contract. Re-announced when Home Assistant says `homeassistant/status`
// is `online` (it forgets non-retained state on restart).

export const HA_DISCOVERY_PREFIX = 'homeassistant';
export const HA_STATUS_TOPIC = `${HA_DISCOVERY_PREFIX}/status`;

export interface HaSlot {
  name: string;
  /** `variant@backend` choices for the select; empty: no select for this slot. */
  options: readonly string[];
}

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

export function haDiscoveryTopic(deviceId: string): string {
  return `${HA_DISCOVERY_PREFIX}/device/${haObjectId(deviceId)}/config`;
}

/** Home Assistant object ids allow [a-zA-Z0-9_-] only. */
export function haObjectId(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

function jinjaString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function metricMean(metric: string): string {
  return `{{ value_json.metrics[${jinjaString(metric)}].mean | default(none) }}`;
}

export function buildHaDiscovery(input: HaDiscoveryInput): HaDeviceConfig {
  const t = deviceTopics(input.deviceId);
  const oid = haObjectId(input.deviceId);
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
    const safe = slot.name.replace(/[^A-Za-z0-9_-]/g, '_');
    sensor(`slot_${slot.name}_tokens_per_sec`, {
      name: `${slot.name} tokens/s`,
      unit_of_measurement: 'tokens/s',
      state_class: 'measurement',
      value_template: metricMean(`slot.${safe}.tokens_per_sec`),
    });
    sensor(`slot_${slot.name}_model`, {
      name: `${slot.name} active model`,
      icon: 'mdi:brain',
      value_template: `{{ value_json.slots[${s}].model | default('none') }}`,
    });
    if (slot.options.length > 0) {
      const unique_id = `mnn_edge_${oid}_slot_${haObjectId(slot.name)}_placement`;
      cmps[unique_id] = {
        p: 'select',
        unique_id,
        name: `${slot.name} variant@backend`,
        options: [...slot.options],
        state_topic: t.telemetry,
        value_template: `{{ value_json.slots[${s}].variant ~ '@' ~ value_json.slots[${s}].backend }}`,
        command_topic: t.command('set-placement'),
        command_template: `{"params":{"slot":${JSON.stringify(slot.name)},"variant":"{{ value.split('@')[0] }}","backend":"{{ value.split('@')[1] }}"}}`,
      };
    }
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
