// The effective configuration is built from four inputs, each winning over the one before:
//
//   built-in defaults  <  the file (/etc/mnn-edge/agent.json or --config)  <  the run-time overlay  <  flags
//
// The overlay is what the dashboard, the fleet and Home Assistant change while the agent runs
// (<dataDir>/config-overlay.json); flags win over it so that a `--port` on the command line always holds.
// Every leaf (a scalar or an array: arrays are replaced whole, never merged) remembers the source it came from,
// which is what `mnn-edge config --sources` and the Settings page show.

export type ConfigSource = 'default' | 'file' | 'overlay' | 'flag';
export const CONFIG_SOURCES: readonly ConfigSource[] = ['default', 'file', 'overlay', 'flag'];

export type JsonObject = Record<string, unknown>;

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * RFC 7386 JSON merge patch: objects merge key by key, `null` removes a key, anything else replaces. This is
 * the shape of every change to the overlay (`{"voice": {"systemPrompt": null}}` hands the key back to the file).
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: JsonObject = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Drops objects left empty by a patch, so the overlay file never holds `{"voice": {}}`. */
export function pruneEmpty(v: unknown): unknown {
  if (!isPlainObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    const p = pruneEmpty(x);
    if (isPlainObject(p) && Object.keys(p).length === 0) continue;
    out[k] = p;
  }
  return out;
}

/** `[path, value]` for every leaf; arrays and empty objects are leaves. */
export function leaves(v: unknown, prefix = ''): Array<[string, unknown]> {
  if (!isPlainObject(v) || (Object.keys(v).length === 0 && prefix !== '')) return prefix ? [[prefix, v]] : [];
  return Object.entries(v).flatMap(([k, x]) => leaves(x, prefix ? `${prefix}.${k}` : k));
}

export function valueAt(v: unknown, path: string): unknown {
  let cur = v;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur) || !Object.hasOwn(cur, part)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** The source each leaf of the merged configuration came from: the last source that holds the leaf or a parent. */
export function sourcesOf(
  inputs: ReadonlyArray<{ source: ConfigSource; value: unknown }>,
): Map<string, ConfigSource> {
  const out = new Map<string, ConfigSource>();
  for (const { source, value } of inputs) {
    for (const [path] of leaves(value)) {
      // A source replacing a whole subtree (an array, or a slot given as a new object) owns everything below.
      for (const known of out.keys()) if (known.startsWith(`${path}.`)) out.delete(known);
      out.set(path, source);
    }
  }
  return out;
}

export interface LeafChange {
  key: string;
  old: unknown;
  new: unknown;
}

/** Leaf-by-leaf differences between two configurations (either side may lack the leaf). */
export function diffLeaves(before: unknown, after: unknown): LeafChange[] {
  const a = new Map(leaves(before));
  const b = new Map(leaves(after));
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  const out: LeafChange[] = [];
  for (const key of keys) {
    const x = a.get(key);
    const y = b.get(key);
    if (JSON.stringify(x) !== JSON.stringify(y)) out.push({ key, old: x, new: y });
  }
  return out;
}
