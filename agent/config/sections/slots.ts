import { MnnEdgeError } from '../../../lib/errors.js';
import type { JsonSchema } from '../../../lib/schema.js';
import {
  BUILTINS,
  defaultPlanPolicy,
  type PlanPolicy,
  SLOT_NAMES,
  type SlotName,
  type SlotSpec,
} from '../../plan/types.js';

// `slots`: which model (or built-in) each role of the appliance uses. `runtime`: memory budget and swap knobs.
//
//   "slots": {
//     "voice.vad": { "builtin": "energy-vad" },
//     "voice.llm": { "model": "qwen2-vl-2b", "variant": "int4" },
//     "vision.vlm": { "model": "qwen2-vl-2b" }        ← same model: one loaded instance serves both
//   }

export interface SlotConfigModel {
  model: string;
  version?: string;
  variant?: string;
  priority?: number;
  contextTokens?: number;
  enabled?: boolean;
}

export interface SlotConfigBuiltin {
  builtin: (typeof BUILTINS)[number];
  enabled?: boolean;
}

export type SlotConfig = SlotConfigModel | SlotConfigBuiltin;
export type SlotsConfig = Partial<Record<SlotName, SlotConfig>>;

export interface RuntimeConfig {
  /** Share of RAM all models may use together (0.1–0.95). */
  budgetFraction?: number;
  /** Kept back from that share for the agent and the OS. */
  reserveMiB?: number;
  /** MemAvailable kept free during a hot swap; below it the swap stops the old instance first. */
  swapReserveMiB?: number;
  drainTimeoutMs?: number;
  /** Probe new models in the background after an install. */
  probeAfterInstall?: boolean;
  /**
   * Per text LLM instance: conversations whose KV it keeps at once (1: one, as before) and the MiB the extra ones
   * may hold together; counted in the memory plan, dropped first when memory is short.
   */
  conversationSnapshots?: { max?: number; budgetMiB?: number };
}

/** The built-in order of importance: voice first (a conversation stalls without it), vision last. */
export const DEFAULT_PRIORITY: Record<SlotName, number> = {
  'voice.vad': 100,
  'voice.wake': 100,
  'voice.asr': 90,
  'voice.llm': 80,
  'voice.omni': 80,
  'voice.tts': 70,
  'vision.vlm': 50,
};

export const DEFAULT_CONTEXT: Record<SlotName, number> = {
  'voice.vad': 0,
  'voice.wake': 0,
  'voice.asr': 512,
  'voice.llm': 2048,
  'voice.omni': 2048,
  'voice.tts': 1024,
  'vision.vlm': 2048,
};

const id = { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,128}$' } as const;

const slotSchema: JsonSchema = {
  anyOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['model'],
      properties: {
        model: id,
        version: { type: 'string', minLength: 1, maxLength: 64 },
        variant: { type: 'string', minLength: 1, maxLength: 64 },
        priority: { type: 'integer', minimum: 0, maximum: 1000 },
        contextTokens: { type: 'integer', minimum: 0, maximum: 1_048_576 },
        enabled: { type: 'boolean' },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['builtin'],
      properties: { builtin: { enum: BUILTINS }, enabled: { type: 'boolean' } },
    },
  ],
};

export const slotsSchema: JsonSchema = {
  type: 'object',
  description: 'Model (or built-in) per slot; slots naming the same model share one loaded instance.',
  additionalProperties: false,
  properties: Object.fromEntries(SLOT_NAMES.map((s) => [s, slotSchema])),
};

export const runtimeSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    budgetFraction: { type: 'number', minimum: 0.1, maximum: 0.95 },
    reserveMiB: { type: 'integer', minimum: 0 },
    swapReserveMiB: { type: 'integer', minimum: 0 },
    drainTimeoutMs: { type: 'integer', minimum: 0, maximum: 600_000 },
    probeAfterInstall: { type: 'boolean' },
    conversationSnapshots: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max: { type: 'integer', minimum: 1, maximum: 64 },
        budgetMiB: { type: 'integer', minimum: 0 },
      },
    },
  },
};

/** The config source of the desired state. `voice.tts` and `voice.omni` both speak, so only one may be on. */
export function slotSpecsFromConfig(slots: SlotsConfig | undefined): SlotSpec[] {
  const specs: SlotSpec[] = [];
  for (const name of SLOT_NAMES) {
    const c = slots?.[name];
    if (!c) continue;
    const enabled = c.enabled ?? true;
    if ('builtin' in c) {
      specs.push({
        slot: name,
        use: { builtin: c.builtin },
        priority: DEFAULT_PRIORITY[name],
        contextTokens: 0,
        enabled,
      });
      continue;
    }
    const model: SlotSpec['use'] = { model: { id: c.model } };
    if (c.version !== undefined) model.model.version = c.version;
    if (c.variant !== undefined) model.model.variant = c.variant;
    specs.push({
      slot: name,
      use: model,
      priority: c.priority ?? DEFAULT_PRIORITY[name],
      contextTokens: c.contextTokens ?? DEFAULT_CONTEXT[name],
      enabled,
    });
  }
  const speaking = specs.filter((s) => s.enabled && (s.slot === 'voice.tts' || s.slot === 'voice.omni'));
  if (speaking.length > 1)
    throw new MnnEdgeError(
      'ECONFIG',
      'Invalid slots: voice.tts and voice.omni are both enabled; the voice pipeline uses one or the other',
    );
  return specs;
}

export function planPolicyFromConfig(runtime: RuntimeConfig | undefined): PlanPolicy {
  return {
    ...defaultPlanPolicy,
    ...(runtime?.budgetFraction !== undefined ? { budgetFraction: runtime.budgetFraction } : {}),
    ...(runtime?.reserveMiB !== undefined ? { reserveBytes: runtime.reserveMiB * 1024 * 1024 } : {}),
    conversationSnapshots: {
      max: runtime?.conversationSnapshots?.max ?? defaultPlanPolicy.conversationSnapshots.max,
      budgetBytes:
        runtime?.conversationSnapshots?.budgetMiB !== undefined
          ? runtime.conversationSnapshots.budgetMiB * 1024 * 1024
          : defaultPlanPolicy.conversationSnapshots.budgetBytes,
    },
  };
}
