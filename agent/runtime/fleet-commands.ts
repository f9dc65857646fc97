import { MnnEdgeError } from '../../lib/errors.js';
import type { JsonSchema } from '../../lib/schema.js';
import type { CommandDefinition } from '../fleet/commands.js';
import { explainPlacement } from '../plan/explain.js';
import { SLOT_NAMES, type SlotConstraints, type SlotName } from '../plan/types.js';
import { slotConstraintsSchema } from './desired/desired-state.js';
import type { Runtime } from './runtime.js';

// The runtime's fleet commands (MQTT cmd/<name>): the operator's way to see and override placement and to
// start measurements. Registered at the composition root into the fleet's CommandRegistry.

export interface CommandSink {
  register<P>(definition: CommandDefinition<P>): void;
}

function summary(runtime: Runtime) {
  const placement = runtime.desired.placement();
  return {
    revision: runtime.desired.revision().revision,
    slots: placement?.slots ?? [],
    text: placement ? explainPlacement(placement) : 'no placement yet',
  };
}

const setPlacementParams: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['slot'],
  properties: {
    slot: { enum: SLOT_NAMES },
    /** The override; null (or absent) clears the slot's pin. */
    pin: { anyOf: [slotConstraintsSchema, { type: 'null' }] },
  },
};

const benchParams: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    modelId: { type: 'string', minLength: 1, maxLength: 128 },
    version: { type: 'string', minLength: 1, maxLength: 64 },
  },
};

export function registerRuntimeCommands(sink: CommandSink, runtime: Runtime): void {
  sink.register({
    name: 'get-placement',
    summary: 'the placement per slot with its reasons, the serving instances and the loop health',
    handler: () => ({ ...summary(runtime), state: runtime.state() }),
  });
  sink.register<{ slot: SlotName; pin?: SlotConstraints | null }>({
    name: 'set-placement',
    summary: 'pin a slot (version, variant, backend, threads, precision, memory); pin null clears it',
    params: setPlacementParams,
    timeoutMs: 10 * 60_000,
    async handler(params) {
      if (params.pin === undefined || params.pin === null) await runtime.unpin(params.slot, 'fleet');
      else await runtime.pin(params.slot, params.pin, 'fleet');
      await runtime.settled();
      return summary(runtime);
    },
  });
  sink.register<{ modelId?: string; version?: string }>({
    name: 'bench-models',
    summary: 'probe installed models on this board (all, or one model / version) and replan with the numbers',
    params: benchParams,
    timeoutMs: 60 * 60_000,
    async handler(params, ctx) {
      if (params.version !== undefined && params.modelId === undefined)
        throw new MnnEdgeError('EINVAL', 'bench-models: a version needs a modelId');
      const results = await runtime.probeModels(params, { signal: ctx.signal });
      return { results, ...summary(runtime) };
    },
  });
}
