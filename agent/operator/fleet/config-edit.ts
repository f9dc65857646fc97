import { MnnEdgeError } from '../../../lib/errors.js';
import type { JsonSchema } from '../../../lib/schema.js';
import { fileOnlyKeys } from '../../config/overlay-keys.js';
import { isSecretKey, redactConfig } from '../../config/redact.js';
import { agentConfigSchema } from '../../config/schema.js';
import { isPlainObject, type JsonObject } from '../../config/sources.js';
import { SLOT_NAMES } from '../../plan/types.js';

// The operator's side of `mnn-edge fleet config`: `--set key=value` pairs become one merge patch for the
// devices' `set-config` (checked here for syntax, unknown keys and file-only keys before anything is sent;
// values are checked by each device with the file's schema and messages), and a reference file is compared
// with each device's effective configuration, key by key (config drift).
//
// Slot names hold dots (`voice.llm`), so `slots.voice.llm.model` is read as slots → voice.llm → model.

function usage(message: string): never {
  throw new MnnEdgeError('EUSAGE', message);
}

/** `slots.voice.llm.model` → ['slots', 'voice.llm', 'model']; other keys split on dots. */
export function splitKey(key: string): string[] {
  if (key === '' || key.startsWith('.') || key.endsWith('.') || key.includes('..'))
    usage(`--set: "${key}" is not a key (dotted names such as voice.systemPrompt)`);
  if (key !== 'slots' && key.startsWith('slots.')) {
    const rest = key.slice('slots.'.length);
    const slot = SLOT_NAMES.find((s) => rest === s || rest.startsWith(`${s}.`));
    if (!slot) usage(`--set ${key}: unknown slot (slots are ${SLOT_NAMES.join(', ')})`);
    const below = rest.slice(slot.length + 1);
    return ['slots', slot, ...(below ? below.split('.') : [])];
  }
  return key.split('.');
}

function propertiesOf(schema: JsonSchema): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = { ...schema.properties };
  for (const alt of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) Object.assign(out, propertiesOf(alt));
  return out;
}

/** Throws a usage error naming the first part of `parts` that the configuration schema does not know. */
export function assertKnownKey(parts: readonly string[], schema: JsonSchema = agentConfigSchema): void {
  let at = schema;
  for (let i = 0; i < parts.length; i++) {
    const props = propertiesOf(at);
    const next =
      props[parts[i]!] ?? (isPlainObject(at.additionalProperties) ? at.additionalProperties : undefined);
    if (!next) {
      const where = parts.slice(0, i).join('.');
      const known = Object.keys(props).sort();
      usage(
        known.length > 0
          ? `--set ${parts.join('.')}: unknown key "${parts[i]}"${where ? ` in ${where}` : ''} (known: ${known.join(', ')})`
          : `--set ${parts.join('.')}: ${where} is a single value, it has no keys below it`,
      );
    }
    at = next;
  }
}

/** A value as given: JSON when it parses (numbers, booleans, null, arrays, objects), else the text itself. */
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * `key=value` pairs as one merge patch. `null` hands a key back to the file on each device; a slot given
 * replaces the device's whole entry for that slot (as in the dashboard), so give its model and variant together.
 */
export function patchFromSets(sets: readonly string[]): JsonObject {
  const patch: JsonObject = {};
  const seen = new Set<string>();
  for (const item of sets) {
    const eq = item.indexOf('=');
    if (eq <= 0) usage(`--set expects key=value (e.g. voice.systemPrompt="Be brief"), got "${item}"`);
    const key = item.slice(0, eq).trim();
    const parts = splitKey(key);
    assertKnownKey(parts);
    if (seen.has(key)) usage(`--set ${key} is given twice`);
    seen.add(key);
    let at = patch;
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1) {
        if (Object.hasOwn(at, part)) usage(`--set ${key} overlaps another --set of the same key`);
        at[part] = parseValue(item.slice(eq + 1));
        break;
      }
      const next = at[part];
      if (next !== undefined && !isPlainObject(next))
        usage(`--set ${key} overlaps --set ${parts.slice(0, i + 1).join('.')}`);
      at[part] = next ?? {};
      at = at[part] as JsonObject;
    }
  }
  const fileOnly = fileOnlyKeys(patch);
  if (fileOnly.length > 0)
    usage(
      fileOnly
        .map(
          (k) =>
            `${k}: is changed only in each device's configuration file, not over the fleet (the dashboard refuses it too)`,
        )
        .join('; '),
    );
  return patch;
}

export interface DriftRow {
  key: string;
  device: unknown;
  reference: unknown;
}

/** Leaves with their path as parts (slot names keep their dots); arrays are leaves. */
function leafPaths(v: unknown, path: string[] = []): Array<[string[], unknown]> {
  if (!isPlainObject(v) || (Object.keys(v).length === 0 && path.length > 0)) return [[path, v]];
  return Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...path, k]));
}

function at(v: unknown, parts: readonly string[]): unknown {
  let cur = v;
  for (const p of parts) {
    if (!isPlainObject(cur) || !Object.hasOwn(cur, p)) return undefined;
    cur = cur[p];
  }
  return cur;
}

/**
 * The keys the reference names whose value on the device differs, secrets masked on both sides (a masked
 * secret shows only that one is set). A slot the reference names is compared whole: a key the device has
 * below it and the reference lacks is drift too, as the file's slot entry replaces the default's.
 */
export function configDrift(reference: JsonObject, effective: unknown): DriftRow[] {
  const ref = redactConfig(reference) as JsonObject;
  const paths = new Map<string, string[]>();
  for (const [p] of leafPaths(ref)) paths.set(p.join('\u0000'), p);
  const refSlots = isPlainObject(ref['slots']) ? Object.keys(ref['slots']) : [];
  for (const slot of refSlots)
    for (const [p] of leafPaths(at(effective, ['slots', slot]), ['slots', slot]))
      if (p.length > 2) paths.set(p.join('\u0000'), p);
  const rows: DriftRow[] = [];
  for (const parts of paths.values()) {
    const reference = at(ref, parts);
    const device = at(effective, parts);
    if (JSON.stringify(reference) !== JSON.stringify(device))
      rows.push({ key: parts.join('.'), device, reference });
  }
  return rows.sort((a, b) => a.key.localeCompare(b.key));
}

/** For tables: JSON, shortened; `unset` (or what the caller says) where the side lacks the key. */
export function shownValue(v: unknown, key = '', unset = '(unset)'): string {
  if (v === undefined) return unset;
  const text = JSON.stringify(isSecretKey(key) && typeof v === 'string' && !v.startsWith('/') ? '***' : v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
