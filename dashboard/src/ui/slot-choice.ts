import { SLOT_KINDS, type SlotName } from '../../../agent/dashboard-api/wire.js';
import type { ConfigSource, KeyRow } from './settings-fields.js';

// A slot's model select: what it holds now (from GET /api/config), what it may hold (installed models whose
// task fits the slot, "none", and "as in the file" once the run-time settings hold the slot), and the merge
// patch each choice sends. Pure, so the rules are unit tested.

export type SlotChoice =
  | { model: string }
  | { builtin: string }
  | 'none'
  /** Hand the slot back to the configuration file (removes the run-time entry). */
  | 'file';

export interface SlotValue {
  /** The select's value: `model:<id>`, `builtin:<name>` or `none`. */
  value: string;
  model?: string;
  builtin?: string;
  enabled: boolean;
  source?: ConfigSource;
}

export interface SlotOption {
  value: string;
  label: string;
  choice: SlotChoice;
}

export function slotValue(slot: SlotName, keys: readonly KeyRow[]): SlotValue {
  const at = (leaf: string) => keys.find((k) => k.key === `slots.${slot}.${leaf}`);
  const model = at('model');
  const builtin = at('builtin');
  const enabled = at('enabled')?.value !== false;
  const source = (model ?? builtin)?.source;
  const base = { enabled, ...(source ? { source } : {}) };
  if (typeof model?.value === 'string')
    return { ...base, model: model.value, value: enabled ? `model:${model.value}` : 'none' };
  if (typeof builtin?.value === 'string')
    return { ...base, builtin: builtin.value, value: enabled ? `builtin:${builtin.value}` : 'none' };
  return { ...base, value: 'none' };
}

export function slotChoices(
  slot: SlotName,
  current: SlotValue,
  installed: ReadonlyArray<{ id: string; kind: string }>,
): SlotOption[] {
  const kinds = SLOT_KINDS[slot] as readonly string[];
  const out: SlotOption[] = [{ value: 'none', label: 'none', choice: 'none' }];
  const seen = new Set<string>();
  for (const m of installed) {
    if (!kinds.includes(m.kind) || seen.has(m.id)) continue;
    seen.add(m.id);
    out.push({ value: `model:${m.id}`, label: `${m.id} (${m.kind})`, choice: { model: m.id } });
  }
  if (current.model && !seen.has(current.model))
    out.push({
      value: `model:${current.model}`,
      label: `${current.model} (not installed)`,
      choice: { model: current.model },
    });
  if (current.builtin)
    out.push({
      value: `builtin:${current.builtin}`,
      label: `built-in ${current.builtin}`,
      choice: { builtin: current.builtin },
    });
  if (current.source === 'overlay')
    out.push({ value: 'file', label: 'as in the configuration file', choice: 'file' });
  return out;
}

/** The merge patch of the run-time settings for a choice (a slot named replaces its run-time entry whole). */
export function slotPatch(
  slot: SlotName,
  choice: SlotChoice,
  keys: readonly KeyRow[],
): Record<string, unknown> {
  if (choice === 'file') return { slots: { [slot]: null } };
  if (choice !== 'none') return { slots: { [slot]: choice } };
  const current = slotValue(slot, keys);
  // "none" over a slot the file fills: kept as a disabled entry, so the file's model does not come back.
  if (current.model) return { slots: { [slot]: { model: current.model, enabled: false } } };
  if (current.builtin) return { slots: { [slot]: { builtin: current.builtin, enabled: false } } };
  return { slots: { [slot]: null } };
}
