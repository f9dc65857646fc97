import { deepMerge } from '../config/load.js';
import { overlayKeyOf } from '../config/overlay-keys.js';
import { isSecretKey, redactConfig } from '../config/redact.js';
import type { AgentConfig } from '../config/schema.js';
import { defaultTelemetryConfig } from '../config/sections/telemetry.js';
import { visionDefaults } from '../config/sections/vision.js';
import { voiceDefaults } from '../config/sections/voice.js';
import { wyomingDefaults } from '../config/sections/wyoming.js';
import { type ConfigSource, leaves } from '../config/sources.js';

// The configuration as a person reads it: every key with its value (secrets masked), the source it came from, and
// whether it can be changed at run time (live, or stored for the next start) or only in the file.

export type KeyAccess = 'live' | 'restart' | 'file';

export interface KeyRow {
  key: string;
  value: unknown;
  source: ConfigSource;
  access: KeyAccess;
}

/** The sections' own defaults are filled in by their modules; shown here so every key has a value and a source. */
export function withSectionDefaults(config: AgentConfig): Record<string, unknown> {
  return deepMerge(
    {
      voice: voiceDefaults,
      vision: visionDefaults,
      telemetry: defaultTelemetryConfig,
      wyoming: wyomingDefaults,
    },
    config,
  ) as Record<string, unknown>;
}

export function keyRows(config: AgentConfig, sources: ReadonlyMap<string, ConfigSource>): KeyRow[] {
  const shown = redactConfig(withSectionDefaults(config));
  return leaves(shown).map(([key, value]) => {
    const k = overlayKeyOf(key);
    return {
      key,
      value,
      source: sources.get(key) ?? 'default',
      access: k === undefined || isSecretKey(key) ? 'file' : k.apply,
    };
  });
}

/** `key  value  (source, access)` lines for `mnn-edge config --sources`. */
export function formatKeyRows(rows: readonly KeyRow[]): string {
  const width = Math.min(48, Math.max(...rows.map((r) => r.key.length)));
  return rows
    .map((r) => {
      const v = JSON.stringify(r.value);
      const value = v.length > 60 ? `${v.slice(0, 57)}...` : v;
      const access =
        r.access === 'file' ? 'file only' : r.access === 'restart' ? 'run time, after restart' : 'run time';
      return `${r.key.padEnd(width)}  ${value}  [${r.source}; ${access}]`;
    })
    .join('\n');
}
