// The workloads' sections with their defaults filled in; the schema (agent/config/sections) has already
// refused bad values by the time these run.
import { deepMerge } from '../config/load.js';
import { visionDefaults } from '../config/sections/vision.js';
import { voiceDefaults } from '../config/sections/voice.js';
export function resolveVoiceConfig(section) {
    return deepMerge(voiceDefaults, section ?? {});
}
export function resolveVisionConfig(section) {
    return deepMerge(visionDefaults, section ?? {});
}
//# sourceMappingURL=config.js.map