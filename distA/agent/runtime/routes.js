import { MnnEdgeError } from '../common/errors.js';
import { HttpError } from '../common/http-error.js';
import { explainPlacement } from '../plan/explain.js';
import { isSlotName } from '../plan/types.js';
import { assertSlot } from './desired-state.js';
import { parsePinBody } from './placement-input.js';
// The runtime's HTTP routes: its state and desired-state document with pins (registered by the runtime
// module), and the dashboard's placement page over a PlacementPort (registered by the dashboard module, which
// answers 503 with the reason while no runtime runs).
function toHttp(err) {
    if (err instanceof MnnEdgeError && err.code === 'EINVAL')
        throw new HttpError(400, 'invalid_request', err.message);
    // A pin to a backend whose evidence chain failed: refused, nothing changed.
    if (err instanceof MnnEdgeError && err.code === 'EBACKEND')
        throw new HttpError(409, 'backend_unusable', err.message);
    throw err;
}
export function registerRuntimeRoutes(ctx, runtime) {
    const r = ctx.router;
    return [
        r.route('GET', '/api/runtime', (c) => c.json(200, { state: runtime.state(), desired: runtime.document() })),
        r.route('GET', '/api/runtime/placement', (c) => {
            const placement = runtime.desired.placement();
            if (!placement)
                throw new HttpError(404, 'not_found', 'No placement yet: the runtime has not planned');
            c.json(200, { placement, text: explainPlacement(placement) });
        }),
        r.route('PUT', '/api/runtime/pins/:slot', async (c) => {
            try {
                const slot = assertSlot(c.params['slot']);
                // Runtime.pin checks the backend against this board first (its values, its chain), then the schema.
                const body = (await c.readJson());
                const placement = await runtime.pin(slot, body, 'dashboard');
                c.json(200, { placement });
            }
            catch (err) {
                toHttp(err);
            }
        }),
        r.route('DELETE', '/api/runtime/pins/:slot', async (c) => {
            try {
                const placement = await runtime.unpin(assertSlot(c.params['slot']), 'dashboard');
                c.json(200, { placement });
            }
            catch (err) {
                toHttp(err);
            }
        }),
    ];
}
function authorOf(ctx) {
    return `dashboard (${ctx.auth?.method ?? 'anonymous'} from ${ctx.req.socket.remoteAddress ?? 'unknown'})`;
}
/** The dashboard's placement API; returns the removers of its routes. */
export function registerPlacementRoutes(router, port, engine) {
    const placementPort = () => {
        if (port === undefined) {
            throw new HttpError(503, 'runtime_unavailable', 'The model runtime is not running on this agent, so nothing is placed');
        }
        return port;
    };
    const slotParam = (ctx) => {
        const slot = ctx.params['slot'];
        if (!isSlotName(slot))
            throw new HttpError(404, 'unknown_slot', `No slot named ${JSON.stringify(slot)}`);
        return slot;
    };
    return [
        router.route('GET', '/api/placement', (ctx) => {
            ctx.json(200, { engine: engine(), ...placementPort().view() });
        }),
        router.route('PUT', '/api/placement/:slot/pin', async (ctx) => {
            const p = placementPort();
            const slot = slotParam(ctx);
            const constraints = parsePinBody(await ctx.readJson());
            try {
                await p.pin(slot, constraints, authorOf(ctx));
            }
            catch (err) {
                toHttp(err);
            }
            ctx.json(200, { ok: true, slot, pinned: constraints });
        }),
        router.route('DELETE', '/api/placement/:slot/pin', async (ctx) => {
            const p = placementPort();
            const slot = slotParam(ctx);
            await p.unpin(slot, authorOf(ctx));
            ctx.json(200, { ok: true, slot });
        }),
        router.route('POST', '/api/placement/replan', async (ctx) => {
            await placementPort().replan(`requested by ${authorOf(ctx)}`);
            ctx.json(200, { ok: true });
        }),
    ];
}
//# sourceMappingURL=routes.js.map