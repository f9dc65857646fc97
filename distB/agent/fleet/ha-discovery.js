import { deviceTopics, topicSegment } from './topics.js';
// Home Assistant MQTT discovery, device-based form: one retained config message at
// `homeassistant/device/<segment>/config` describing the device (`dev`), who made the integration (`o`, origin) and
// all its entities (`cmps`). The entities read the agent's own topics (telemetry, status, documents), so Home
// Assistant needs nothing beyond the contract. Re-announced when Home Assistant says `homeassistant/status`
// is `online` (it forgets non-retained state on restart), and whenever the set of entities changes: an entity
// that went away (a slot no longer placed) is sent once as its platform alone, which is how device-based
// discovery removes a component.
export const HA_DISCOVERY_PREFIX = 'homeassistant';
export const HA_STATUS_TOPIC = `${HA_DISCOVERY_PREFIX}/status`;
/** The select's choice that clears the operator's pin (the planner decides again). */
export const HA_AUTO_BACKEND = 'auto';
/** The device's topic segment, which is also a valid Home Assistant object id ([A-Za-z0-9_-]). */
export function haDiscoveryTopic(deviceId) {
    return `${HA_DISCOVERY_PREFIX}/device/${topicSegment(deviceId)}/config`;
}
/** For names inside unique ids (slots, thermal zones): Home Assistant allows [a-zA-Z0-9_-] only. */
export function haObjectId(s) {
    return s.replace(/[^A-Za-z0-9_-]/g, '_');
}
/** Components announced before but absent now, in Home Assistant's removal form (the platform alone). */
export function haRemovals(previous, next) {
    const out = {};
    for (const [id, c] of Object.entries(previous?.cmps ?? {}))
        if (!(id in next.cmps))
            out[id] = { p: c.p };
    return out;
}
function jinjaString(s) {
    return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
function metricMean(metric) {
    return `{{ value_json.metrics[${jinjaString(metric)}].mean | default(none) }}`;
}
export function buildHaDiscovery(input) {
    const t = deviceTopics(input.deviceId);
    const oid = t.segment;
    const cmps = {};
    const sensor = (key, fields) => {
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
            value_template: metricMean(`slot.${slot.name}.tokens_per_sec`),
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
            const unique_id = `mnn_edge_${oid}_slot_${haObjectId(slot.name)}_placement`;
            const slotJson = JSON.stringify(slot.name);
            // `set-placement` takes {slot, pin}: a backend pins it, `auto` (pin null) hands it back to the planner.
            cmps[unique_id] = {
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
    }
    const modelsUid = `mnn_edge_${oid}_models`;
    cmps[modelsUid] = {
        p: 'update',
        unique_id: modelsUid,
        name: 'Models',
        device_class: 'firmware',
        state_topic: t.document('models'),
        // The models document carries the installed and the newest available package versions.
        value_template: "{{ {'installed_version': value_json.data.installedVersion | default(''), 'latest_version': value_json.data.latestVersion | default(value_json.data.installedVersion | default(''))} | to_json }}",
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
//# sourceMappingURL=ha-discovery.js.map