import { existsSync } from 'node:fs';
import { MnnEdgeError } from '../common/errors.js';
import { readJsonFile } from '../common/json-input.js';
import { formatSchemaErrors, validate } from '../common/schema.js';
import { defaultConfig, SYSTEM_CONFIG_PATH } from './defaults.js';
import { agentConfigSchema } from './schema.js';
function isPlainObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function describeJson(v) {
    if (v === null)
        return 'null';
    if (Array.isArray(v))
        return 'an array';
    return `a ${typeof v}`;
}
export function deepMerge(base, override) {
    if (!isPlainObject(base) || !isPlainObject(override))
        return (override === undefined ? base : override);
    const out = { ...base };
    for (const [k, v] of Object.entries(override))
        out[k] = k in out ? deepMerge(out[k], v) : v;
    return out;
}
export function parseConfig(raw, source, env) {
    const errors = validate(agentConfigSchema, raw);
    if (errors.length > 0) {
        throw new MnnEdgeError('ECONFIG', `Invalid configuration in ${source}: ${formatSchemaErrors(errors)}`, {
            source,
            errors,
        });
    }
    return deepMerge(defaultConfig(env), raw);
}
export function loadConfig(options = {}) {
    const path = options.path ?? (existsSync(SYSTEM_CONFIG_PATH) ? SYSTEM_CONFIG_PATH : undefined);
    let raw = {};
    let source = 'built-in defaults';
    if (path !== undefined) {
        try {
            raw = readJsonFile(path, 'configuration file');
        }
        catch (err) {
            throw new MnnEdgeError('ECONFIG', err.message);
        }
        if (!isPlainObject(raw)) {
            throw new MnnEdgeError('ECONFIG', `Configuration file ${path} must hold a JSON object ({ ... }) at the top level, found ${describeJson(raw)}`);
        }
        source = path;
    }
    const merged = options.overrides ? deepMerge(raw, options.overrides) : raw;
    return { config: parseConfig(merged, source, options.env), source };
}
//# sourceMappingURL=load.js.map