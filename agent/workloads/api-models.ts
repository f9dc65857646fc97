// What the model APIs (OpenAI's and Ollama's) offer: the LLM slots, each under the id of the model placed on it,
// read on every request.
import type { SlotName } from '../plan/types.js';
import type { SlotState } from '../runtime/measuring/slot-states.js';
import type { OllamaModel } from './ollama/types.js';
import type { SlotGate } from './slots/scheduler.js';
import type { WorkloadModels } from './slots/slot-models.js';

/** The slots the OpenAI-compatible API offers, each under the id of the model placed on it. */
const API_SLOTS: readonly SlotName[] = ['voice.llm', 'voice.omni', 'vision.vlm'];

/** OllamaModel carries everything the OpenAI API's entries do, and the slot and version Ollama reports. */
export type ApiModels = readonly OllamaModel[];

/**
 * What /v1/models lists, read on every request: a model installed or swapped while the agent runs shows up at
 * once. Slots that share a model appear once, under the first slot that serves it. A model that cannot answer
 * (no engine, failed to load, retrying a load that failed) is not listed, but asking for it by name still answers
 * 503 with the reason.
 */
export function apiModelsOf(
  models: WorkloadModels,
  gateFor: (slot: SlotName) => SlotGate,
  slotStates: (() => readonly SlotState[]) | undefined,
  startedAt: number,
): () => ApiModels {
  return () => {
    const seen = new Set<string>();
    const states = slotStates?.();
    const answers = (slot: SlotName) => {
      const state = states?.find((st) => st.slot === slot);
      return state === undefined
        ? models.missing(slot) === undefined
        : state.servable || (state.phase === 'loading' && state.retryAfterFailures === undefined);
    };
    return API_SLOTS.flatMap((slot) => {
      const id = models.modelId(slot);
      if (id === undefined || seen.has(id)) return [];
      seen.add(id);
      return [
        {
          id,
          slot,
          version: models.version(slot),
          vision: models.capabilities(slot)?.vision ?? false,
          created: startedAt,
          gate: gateFor(slot),
          open: async () => models.chat(slot),
          // A model unloaded by a client's keep_alive loads again on its next request.
          servable: answers(slot) || models.parked(slot),
        },
      ];
    });
  };
}
