import { existsSync } from 'node:fs';
import { MnnEdgeError } from '../../lib/errors.js';
import { readJsonFile } from '../../lib/json-input.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import { defaultConfig, SYSTEM_CONFIG_PATH } from './defaults.js';
import { type OverlayState, OverlayStore } from './overlay-store.js';
import { type AgentConfig, agentConfigSchema } from './schema.js';
import { type ConfigSource, isPlainObject, type JsonObject, sourcesOf } from './sources.js';
import { shippedWakeDefaults } from './wake-default.js';

function describeJson(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

export function deepMerge<T>(base: T, override: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(override))
    return (override === undefined ? base : override) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(override)) out[k] = k in out ? deepMerge(out[k], v) : v;
  return out as T;
}

export interface LoadConfigOptions {
  /** Explicit --config path: it must exist. Without it, /etc/mnn-edge/agent.json is used if present. */
  path?: string;
  /** Values that win over the file (CLI flags). */
  overrides?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

export function parseConfig(raw: unknown, source: string, env?: NodeJS.ProcessEnv): AgentConfig {
  const errors = validate(agentConfigSchema, raw);
  if (errors.length > 0) {
    throw new MnnEdgeError('ECONFIG', `Invalid configuration in ${source}: ${formatSchemaErrors(errors)}`, {
      source,
      errors,
    });
  }
  return deepMerge(defaultConfig(env), raw);
}

/** What `loadConfig` read, source by source: enough to compose the configuration again with another overlay. */
export interface ConfigInputs {
  /** The file's path, or 'built-in defaults'. */
  source: string;
  file: JsonObject;
  flags: JsonObject;
  env?: NodeJS.ProcessEnv;
  store: OverlayStore;
  overlay: OverlayState;
}

/**
 * The overlay over the file: a slot the overlay names replaces the file's entry for that slot whole (a slot is
 * either a model or a built-in; merging `{builtin}` into `{model, variant}` would be neither).
 */
export function overlayOnFile(file: JsonObject, overlay: JsonObject): JsonObject {
  const merged = deepMerge(file, overlay);
  const slots = overlay['slots'];
  if (isPlainObject(slots) && isPlainObject(file['slots'])) {
    merged['slots'] = { ...file['slots'], ...slots };
  }
  return merged;
}

/** The effective configuration from its inputs, validated, and the source each leaf came from. */
export function composeConfig(
  inputs: Omit<ConfigInputs, 'overlay' | 'store'>,
  overlay: JsonObject,
): { config: AgentConfig; sources: Map<string, ConfigSource> } {
  const given = deepMerge(overlayOnFile(inputs.file, overlay), inputs.flags);
  // Defaults that depend on the board (the shipped wake word where a microphone is): under everything given.
  const derived = shippedWakeDefaults(given, inputs.env);
  const raw = deepMerge(derived, given);
  const where =
    Object.keys(overlay).length > 0 ? `${inputs.source} with the run-time settings` : inputs.source;
  const config = parseConfig(raw, where, inputs.env);
  // The file's entries for slots the overlay replaces are gone from the result: they are no one's source.
  const file = { ...inputs.file };
  if (isPlainObject(file['slots']) && isPlainObject(overlay['slots'])) {
    file['slots'] = Object.fromEntries(
      Object.entries(file['slots']).filter(([slot]) => !Object.hasOwn(overlay['slots'] as JsonObject, slot)),
    );
  }
  const sources = sourcesOf([
    { source: 'default', value: deepMerge(defaultConfig(inputs.env), derived) },
    { source: 'file', value: file },
    { source: 'overlay', value: overlay },
    { source: 'flag', value: inputs.flags },
  ]);
  return { config, sources };
}

function readFileInput(path: string | undefined): JsonObject {
  if (path === undefined) return {};
  let raw: unknown;
  try {
    raw = readJsonFile(path, 'configuration file');
  } catch (err) {
    throw new MnnEdgeError('ECONFIG', (err as Error).message);
  }
  if (!isPlainObject(raw)) {
    throw new MnnEdgeError(
      'ECONFIG',
      `Configuration file ${path} must hold a JSON object ({ ... }) at the top level, found ${describeJson(raw)}`,
    );
  }
  return raw;
}

/**
 * Defaults < file < run-time overlay (<dataDir>/config-overlay.json) < flags. A file or flags that are invalid
 * fail the load; an overlay that cannot be used is left out (the last good revision from its log is used) and
 * `inputs.overlay.problem` says why.
 */
export function loadConfigWithInputs(options: LoadConfigOptions = {}): {
  config: AgentConfig;
  source: string;
  inputs: ConfigInputs;
  sources: Map<string, ConfigSource>;
} {
  const path = options.path ?? (existsSync(SYSTEM_CONFIG_PATH) ? SYSTEM_CONFIG_PATH : undefined);
  const file = readFileInput(path);
  const source = path ?? 'built-in defaults';
  const flags = (options.overrides ?? {}) as JsonObject;
  const base = { source, file, flags, ...(options.env ? { env: options.env } : {}) };
  // The data directory (where the overlay lives) is never in the overlay: file and flags decide it.
  const dataDir = parseConfig(deepMerge(file, flags), source, options.env).dataDir;
  const store = new OverlayStore(dataDir);
  let overlay = store.load();
  let composed: ReturnType<typeof composeConfig>;
  try {
    composed = composeConfig(base, overlay.overlay);
  } catch (err) {
    // Valid alone, invalid over this file (voice.tts in the overlay, voice.omni added to the file): the file wins.
    overlay = {
      revision: overlay.revision,
      overlay: {},
      problem: `The run-time settings (revision ${overlay.revision}) do not fit the configuration file and were left out: ${(err as Error).message}`,
    };
    composed = composeConfig(base, {});
  }
  return { ...composed, source, inputs: { ...base, store, overlay } };
}

export function loadConfig(options: LoadConfigOptions = {}): { config: AgentConfig; source: string } {
  const path = options.path ?? (existsSync(SYSTEM_CONFIG_PATH) ? SYSTEM_CONFIG_PATH : undefined);
  const raw = readFileInput(path);
  const source = path ?? 'built-in defaults';
  const merged = options.overrides ? deepMerge(raw, options.overrides) : raw;
  return { config: parseConfig(merged, source, options.env), source };
}
