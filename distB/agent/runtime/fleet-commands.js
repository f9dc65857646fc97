import { MnnEdgeError } from '../common/errors.js';
import { explainPlacement } from '../plan/explain.js';
import { SLOT_NAMES } from '../plan/types.js';
import { slotConstraintsSchema } from './desired-state.js';
function summary(runtime) {
    const placement = runtime.desired.placement();
    return {
        revision: runtime.desired.revision().revision,
        slots: placement?.slots ?? [],
        text: placement ? explainPlacement(placement) : 'no placement yet',
    };
}
const setPlacementParams = {
    type: 'object',
    additionalProperties: false,
    required: ['slot'],
    properties: {
        slot: { enum: SLOT_NAMES },
        /** The override; null (or absent) clears the slot's pin. */
        pin: { anyOf: [slotConstraintsSchema, { type: 'null' }] },
    },
};
const benchParams = {
    type: 'object',
    additionalProperties: false,
    properties: {
        modelId: { type: 'string', minLength: 1, maxLength: 128 },
        version: { type: 'string', minLength: 1, maxLength: 64 },
    },
};
export function registerRuntimeCommands(sink, runtime) {
    sink.register({
        name: 'get-placement',
        summary: 'the placement per slot with its reasons, the serving instances and the loop health',
        handler: () => ({ ...summary(runtime), state: runtime.state() }),
    });
    sink.register({
        name: 'set-placement',
        summary: 'pin a slot (version, variant, backend, threads, precision, memory); pin null clears it',
        params: setPlacementParams,
        timeoutMs: 10 * 60_000,
        async handler(params) {
            if (params.pin === undefined || params.pin === null)
                await runtime.unpin(params.slot, 'fleet');
            else
                await runtime.pin(params.slot, params.pin, 'fleet');
            await runtime.settled();
            return summary(runtime);
        },
    });
    sink.register({
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
//# sourceMappingURL=fleet-commands.js.map