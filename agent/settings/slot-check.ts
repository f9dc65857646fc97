import { MnnEdgeError } from '../../lib/errors.js';
import type { AgentConfig } from '../config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from '../config/sections/slots.js';
import type { LeafChange } from '../config/sources.js';
import {
  type ModelKind,
  type Placement,
  type PlanCatalog,
  SLOT_KINDS,
  SLOT_NAMES,
  type SlotName,
  type SlotSpec,
} from '../plan/types.js';

// A slot set at run time must name an installed model of a task the slot can use, and the planner must be able to
// place it; otherwise the change is refused with the reason and nothing is written or applied.

export function slotsForKind(kind: ModelKind): SlotName[] {
  return SLOT_NAMES.filter((s) => SLOT_KINDS[s].includes(kind));
}

/** `slots.voice.llm.model` → `voice.llm`. */
export function slotOfKey(key: string): SlotName | undefined {
  if (!key.startsWith('slots.')) return undefined;
  const rest = key.slice('slots.'.length);
  return SLOT_NAMES.find((s) => rest === s || rest.startsWith(`${s}.`));
}

export interface SlotCheckDeps {
  catalog(): PlanCatalog | Promise<PlanCatalog>;
  /** The planner's answer for these slots, changing nothing; undefined while no runtime runs. */
  preview?(slots: SlotSpec[]): Promise<Placement> | undefined;
}

function refuse(message: string, details: Record<string, unknown> = {}): never {
  throw new MnnEdgeError('ESLOT', message, details);
}

/** Throws (ESLOT) when a changed slot cannot be served; returns the placement it would get. */
export async function checkSlots(
  next: AgentConfig,
  changes: readonly LeafChange[],
  deps: SlotCheckDeps,
): Promise<Placement | undefined> {
  const changed = [...new Set(changes.map((c) => slotOfKey(c.key)).filter((s): s is SlotName => !!s))];
  if (changed.length === 0) return undefined;
  const slots = next['slots'] as SlotsConfig | undefined;
  const catalog = await deps.catalog();
  for (const slot of changed) {
    const c = slots?.[slot];
    if (!c || !('model' in c) || c.enabled === false) continue;
    const versions = catalog.models.filter((m) => m.id === c.model);
    const installed = [...new Set(catalog.models.map((m) => m.id))].sort();
    if (versions.length === 0)
      refuse(
        `slots.${slot}: model "${c.model}" is not installed on this device (installed: ${installed.join(', ') || 'none'})`,
      );
    const model = c.version ? versions.find((m) => m.version === c.version) : versions[0];
    if (!model)
      refuse(
        `slots.${slot}: model "${c.model}" has no installed version ${c.version} (installed: ${versions.map((m) => m.version).join(', ')})`,
      );
    const kinds = SLOT_KINDS[slot];
    if (!kinds.includes(model.kind))
      refuse(
        `slots.${slot}: model "${c.model}" is a ${model.kind} model; ${slot} takes ${kinds.join(' or ')} models`,
      );
  }
  const placement = await deps.preview?.(slotSpecsFromConfig(slots));
  if (!placement) return undefined;
  for (const slot of changed) {
    const p = placement.slots.find((s) => s.slot === slot);
    if (p && p.status === 'unloaded' && slots?.[slot] && slots[slot].enabled !== false)
      refuse(`slots.${slot}: the planner cannot place it: ${p.reasons.join('; ') || 'no reason given'}`, {
        slot,
        reasons: p.reasons,
      });
  }
  return placement;
}
