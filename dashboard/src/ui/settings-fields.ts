// What the Settings page edits and how a form's text becomes a merge patch. Pure (no DOM), so the rules are unit
// tested: a field left as it was is not sent, an emptied number is refused here with the key named, and a range
// the schema forbids is left to the agent, whose message (naming the key) the page shows as it is.

export type ConfigSource = 'default' | 'file' | 'overlay' | 'flag';
export type KeyAccess = 'live' | 'restart' | 'file';

/** One row of GET /api/config. */
export interface KeyRow {
  key: string;
  value: unknown;
  source: ConfigSource;
  access: KeyAccess;
}

export interface ConfigView {
  revision: number;
  file: string;
  problem?: string;
  keys: KeyRow[];
}

export type FieldType = 'text' | 'textarea' | 'int' | 'number' | 'bool' | 'list';

export interface FieldDef {
  key: string;
  label: string;
  type: FieldType;
  group: string;
  hint?: string;
  /** Shown only when this key is in the configuration (the wake word only with a voice.wake slot). */
  when?: string;
}

/** The assistant's tools group, and the key whose presence says this agent has them. */
export const TOOLS_GROUP = 'Assistant tools';
export const TOOLS_PRESENT = 'voice.tools.limits.maxRounds';

export const SETTINGS_FIELDS: readonly FieldDef[] = [
  { group: 'Voice', key: 'voice.systemPrompt', label: 'System prompt', type: 'textarea' },
  {
    group: 'Voice',
    key: 'wyoming.languages',
    label: 'Languages',
    type: 'list',
    hint: 'what the assistant understands and announces (comma-separated, e.g. en, de)',
  },
  { group: 'Voice', key: 'voice.maxNewTokens', label: 'Max tokens per answer', type: 'int' },
  { group: 'Voice', key: 'voice.maxHistoryMessages', label: 'Conversation messages kept', type: 'int' },
  {
    group: 'Voice',
    key: 'voice.wake.enabled',
    label: 'Wake word',
    type: 'bool',
    when: 'slots.voice.wake.model',
  },
  // The acting assistant's tools (voice.tools): shown where the agent has them. Its MCP servers (a list with
  // write-only tokens) are edited by their own part of the form (ui/mcp-servers.ts), not by a field here.
  ...(
    [
      ['builtins.time', 'Time and date', 'bool', undefined],
      ['builtins.timers', 'Timers', 'bool', undefined],
      ['builtins.camera', 'What the camera sees', 'bool', undefined],
      [
        'builtins.announce',
        'Announce on the speaker',
        'bool',
        'acts on the board: for remote callers only when enabled',
      ],
      ['limits.maxRounds', 'Tool rounds per answer', 'int', undefined],
      ['limits.callTimeoutMs', 'Time for one call (ms)', 'int', undefined],
      ['limits.turnBudgetMs', 'Time for all rounds of an answer (ms)', 'int', undefined],
      [
        'limits.maxResultBytes',
        'Largest tool result (bytes)',
        'int',
        'a longer result is cut before the model reads it',
      ],
    ] as const
  ).map(
    ([k, label, type, hint]): FieldDef => ({
      group: TOOLS_GROUP,
      key: `voice.tools.${k}`,
      label,
      type,
      when: TOOLS_PRESENT,
      ...(hint ? { hint } : {}),
    }),
  ),
  { group: 'Vision', key: 'vision.watch.prompt', label: 'Watch prompt', type: 'textarea' },
  { group: 'Vision', key: 'vision.watch.intervalS', label: 'Watch interval (s)', type: 'number' },
  { group: 'Vision', key: 'vision.watch.onSceneChange', label: 'Only on scene change', type: 'bool' },
  { group: 'Vision', key: 'vision.maxNewTokens', label: 'Max tokens per answer', type: 'int' },
  { group: 'Telemetry', key: 'telemetry.sampleIntervalMs', label: 'Sample interval (ms)', type: 'int' },
  { group: 'Telemetry', key: 'telemetry.publishIntervalMs', label: 'Publish interval (ms)', type: 'int' },
  { group: 'Wyoming (Home Assistant voice)', key: 'wyoming.enabled', label: 'Server on', type: 'bool' },
  { group: 'Wyoming (Home Assistant voice)', key: 'wyoming.port', label: 'Port', type: 'int' },
  {
    group: 'Device',
    key: 'tags',
    label: 'Tags',
    type: 'list',
    hint: 'fleet selectors (comma-separated)',
  },
];

/** Keys that could lock the user out, and the secrets: shown, changed only in the file. */
const FILE_ONLY_SHOWN = ['http.bind', 'http.port', 'http.tls.', 'http.metricsToken', 'mqtt.', 'dataDir'];

export function fileOnlyRows(keys: readonly KeyRow[]): KeyRow[] {
  return keys.filter(
    (r) =>
      r.access === 'file' &&
      FILE_ONLY_SHOWN.some((p) => (p.endsWith('.') ? r.key.startsWith(p) : r.key === p)),
  );
}

export function visibleFields(keys: readonly KeyRow[]): FieldDef[] {
  const present = new Set(keys.map((k) => k.key));
  return SETTINGS_FIELDS.filter((f) => f.when === undefined || present.has(f.when));
}

/** The value as the form shows it. */
export function formText(type: FieldType, value: unknown): string {
  if (value === undefined || value === null) return '';
  if (type === 'list') return Array.isArray(value) ? value.join(', ') : String(value);
  return String(value);
}

/** The form's text as the value to send; a string on error (naming the key). */
export function parseField(field: FieldDef, text: string | boolean): { value: unknown } | { error: string } {
  if (field.type === 'bool') return { value: text === true || text === 'true' };
  const raw = String(text);
  if (field.type === 'text' || field.type === 'textarea') return { value: raw };
  if (field.type === 'list')
    return {
      value: raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    };
  const trimmed = raw.trim();
  const n = Number(trimmed);
  if (trimmed === '' || !Number.isFinite(n))
    return { error: `${field.key}: expected a number, got ${JSON.stringify(raw)}` };
  if (field.type === 'int' && !Number.isInteger(n))
    return { error: `${field.key}: expected a whole number, got ${trimmed}` };
  return { value: n };
}

/** `{a: {b: v}}` for `a.b`, merged into `into`. */
export function setPath(into: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let cur = into;
  for (const p of parts.slice(0, -1)) {
    const next = cur[p];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/**
 * The merge patch for what the form changed: only fields whose value differs from the current one. Any field
 * that does not parse fails the whole change (nothing is half-applied on the agent either).
 */
export function buildPatch(
  fields: readonly FieldDef[],
  keys: readonly KeyRow[],
  entered: ReadonlyMap<string, string | boolean>,
): { patch: Record<string, unknown>; changed: string[] } | { errors: string[] } {
  const current = new Map(keys.map((k) => [k.key, k.value]));
  const patch: Record<string, unknown> = {};
  const changed: string[] = [];
  const errors: string[] = [];
  for (const f of fields) {
    if (!entered.has(f.key)) continue;
    const parsed = parseField(f, entered.get(f.key)!);
    if ('error' in parsed) {
      errors.push(parsed.error);
      continue;
    }
    if (JSON.stringify(parsed.value) === JSON.stringify(current.get(f.key))) continue;
    setPath(patch, f.key, parsed.value);
    changed.push(f.key);
  }
  return errors.length > 0 ? { errors } : { patch, changed };
}

export const SOURCE_TEXT: Record<ConfigSource, string> = {
  default: 'default',
  file: 'file',
  overlay: 'set at run time',
  flag: 'command-line flag',
};

export const ACCESS_TEXT: Record<KeyAccess, string> = {
  live: 'applies at once',
  restart: 'applies after a restart',
  file: 'change in the file',
};

/** A change-log value as one short line. */
export function shortValue(v: unknown): string {
  // A key absent from the file and the run-time settings runs on its built-in default.
  if (v === undefined) return '(default)';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
