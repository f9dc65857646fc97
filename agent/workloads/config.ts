// The workloads' sections with their defaults filled in; the schema (agent/config/sections) has already
// refused bad values by the time these run.
import { deepMerge } from '../config/load.js';
import { type VisionConfig, visionDefaults } from '../config/sections/vision.js';
import { type VoiceConfig, voiceDefaults } from '../config/sections/voice.js';

export function resolveVoiceConfig(section: unknown): VoiceConfig {
  return deepMerge(voiceDefaults, section ?? {});
}

export function resolveVisionConfig(section: unknown): VisionConfig {
  return deepMerge(visionDefaults, section ?? {});
}
