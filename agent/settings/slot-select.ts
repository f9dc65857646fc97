import { MnnEdgeError } from '../../lib/errors.js';
import type { SlotConfig, SlotConfigBuiltin, SlotsConfig } from '../config/sections/slots.js';
import type { JsonObject } from '../config/sources.js';
import { BUILTINS, type PlanCatalog, SLOT_KINDS, SLOT_NAMES, type SlotName } from '../plan/types.js';

// "Which model serves this slot" as a choice from a list (Home Assistant's select per slot; a dashboard select
// could use the same): the choices are the installed models whose task fits the slot, the built-ins the slot can
// run, and "none"; a choice becomes the settings patch that every other path sends through SettingsService.

/** The choice that turns a slot off. */
export const SLOT_NONE = 'none';
const BUILTIN_SUFFIX = ' (built-in)';

/** Which slots take which built-in (an energy VAD needs no model). */
const SLOT_BUILTINS: Partial<Record<SlotName, readonly string[]>> = { 'voice.vad': BUILTINS };

export interface SlotChoices {
  slot: SlotName;
  /** `none` first, then built-ins, then model ids, sorted. */
  options: string[];
}

/** The option a slot's configuration shows as (what the select's state template renders too). */
export function slotChoiceOf(c: SlotConfig | undefined): string {
  if (!c || c.enabled === false) return SLOT_NONE;
  return 'builtin' in c ? `${c.builtin}${BUILTIN_SUFFIX}` : c.model;
}

/**
 * One entry per slot that has something to choose from, or that is configured. A configured model that is not
 * installed stays listed, so the select can show what the slot is set to (and the change back).
 */
export function slotChoices(catalog: PlanCatalog, slots: SlotsConfig | undefined): SlotChoices[] {
  const out: SlotChoices[] = [];
  for (const slot of SLOT_NAMES) {
    const fits = catalog.models.filter((m) => SLOT_KINDS[slot].includes(m.kind)).map((m) => m.id);
    const builtins = (SLOT_BUILTINS[slot] ?? []).map((b) => `${b}${BUILTIN_SUFFIX}`);
    const current = slotChoiceOf(slots?.[slot]);
    const models = [
      ...new Set([...fits, ...(current !== SLOT_NONE && !builtins.includes(current) ? [current] : [])]),
    ];
    if (models.length === 0 && current === SLOT_NONE) continue;
    out.push({ slot, options: [SLOT_NONE, ...builtins, ...models.sort()] });
  }
  return out;
}

/**
 * The settings patch for a choice. The same model keeps the slot's other keys (variant, version, priority) and
 * turns it on again; another model or a built-in replaces the slot's entry; `none` keeps the entry, turned off.
 */
export function slotChoicePatch(slots: SlotsConfig | undefined, slot: string, choice: string): JsonObject {
  if (!(SLOT_NAMES as readonly string[]).includes(slot))
    throw new MnnEdgeError('EINVAL', `Unknown slot "${slot}" (slots are ${SLOT_NAMES.join(', ')})`);
  const current = slots?.[slot as SlotName];
  let next: SlotConfig | null;
  if (choice === SLOT_NONE) next = current ? { ...current, enabled: false } : null;
  else if (choice.endsWith(BUILTIN_SUFFIX))
    // The schema refuses a name that is no built-in, with its message.
    next = { builtin: choice.slice(0, -BUILTIN_SUFFIX.length) as SlotConfigBuiltin['builtin'] };
  else if (current && 'model' in current && current.model === choice) {
    const { enabled: _on, ...rest } = current;
    next = rest;
  } else next = { model: choice };
  return next === null ? {} : { slots: { [slot]: next } };
}

export interface SlotChoiceSourceDeps {
  catalog(): PlanCatalog;
  /** The model store, once open: its install and removal events invalidate the choices. */
  store(): { on(event: 'installed' | 'removed', listener: () => void): () => void } | undefined;
}

/**
 * The choices, computed again only after a model was installed or removed or the settings changed: Home
 * Assistant's announcer asks at every telemetry sample, and reading the catalog (every package's manifest and
 * GPU caches) each time would be idle work for nothing.
 */
export function slotChoiceSource(
  deps: SlotChoiceSourceDeps,
): (slots: SlotsConfig | undefined) => SlotChoices[] {
  let generation = 0;
  let watched: object | undefined;
  let cached: { generation: number; slots: SlotsConfig | undefined; value: SlotChoices[] } | undefined;
  const bump = () => {
    generation++;
  };
  // `slots`: as the settings have them now (a new object after every change).
  return (slots) => {
    const store = deps.store();
    if (store && store !== watched) {
      watched = store;
      store.on('installed', bump);
      store.on('removed', bump);
      cached = undefined;
    }
    if (!store || !cached || cached.generation !== generation || cached.slots !== slots)
      cached = { generation, slots, value: slotChoices(deps.catalog(), slots) };
    return cached.value;
  };
}
