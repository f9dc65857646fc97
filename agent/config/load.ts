import { existsSync } from 'node:fs';
import { MnnEdgeError } from '../common/errors.js';
import { readJsonFile } from '../common/json-input.js';
import { formatSchemaErrors, validate } from '../common/schema.js';
import { defaultConfig, SYSTEM_CONFIG_PATH } from './defaults.js';
import { type AgentConfig, agentConfigSchema } from './schema.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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

export function loadConfig(options: LoadConfigOptions = {}): { config: AgentConfig; source: string } {
  const path = options.path ?? (existsSync(SYSTEM_CONFIG_PATH) ? SYSTEM_CONFIG_PATH : undefined);
  let raw: unknown = {};
  let source = 'built-in defaults';
  if (path !== undefined) {
    try {
      raw = readJsonFile(path, 'configuration file');
    } catch (err) {
      throw new MnnEdgeError('ECONFIG', (err as Error).message);
    }
    source = path;
  }
  const merged = options.overrides ? deepMerge(raw, options.overrides) : raw;
  return { config: parseConfig(merged, source, options.env), source };
}
