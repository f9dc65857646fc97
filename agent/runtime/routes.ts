import { MnnEdgeError } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import type { HttpRouter, RequestContext } from '../http/router.js';
import type { AgentContext } from '../module.js';
import { explainPlacement } from '../plan/explain.js';
import { isSlotName, type SlotConstraints, type SlotName } from '../plan/types.js';
import { parsePinBody } from './desired/placement-input.js';
import type { PlacementPort } from './placement-port.js';
import type { Runtime } from './runtime.js';

// The runtime's HTTP routes: its state and desired-state document with pins (registered by the runtime
// module), and the dashboard's placement page over a PlacementPort (registered by the dashboard module, which
// answers 503 with the reason while no runtime runs).

function toHttp(err: unknown): never {
  if (err instanceof MnnEdgeError && err.code === 'EINVAL')
    throw new HttpError(400, 'invalid_request', err.message);
  // A pin to a backend whose evidence chain failed: refused, nothing changed.
  if (err instanceof MnnEdgeError && err.code === 'EBACKEND')
    throw new HttpError(409, 'backend_unusable', err.message);
  throw err;
}

export function registerRuntimeRoutes(ctx: Pick<AgentContext, 'router'>, runtime: Runtime): (() => void)[] {
  const r = ctx.router;
  return [
    r.route('GET', '/api/runtime', (c) =>
      c.json(200, { state: runtime.state(), desired: runtime.document() }),
    ),
    r.route('GET', '/api/runtime/placement', (c) => {
      const placement = runtime.desired.placement();
      if (!placement) throw new HttpError(404, 'not_found', 'No placement yet: the runtime has not planned');
      c.json(200, { placement, text: explainPlacement(placement) });
    }),
    // The runtime's own name for the pin API: the same handlers as the dashboard's /api/placement/:slot/pin.
    r.route('PUT', '/api/runtime/pins/:slot', (c) => putPin(c, runtime.pin.bind(runtime))),
    r.route('DELETE', '/api/runtime/pins/:slot', (c) => deletePin(c, runtime.unpin.bind(runtime))),
  ];
}

function authorOf(ctx: RequestContext): string {
  return `dashboard (${ctx.auth?.method ?? 'anonymous'} from ${ctx.req.socket.remoteAddress ?? 'unknown'})`;
}

function slotParam(ctx: RequestContext): SlotName {
  const slot = ctx.params['slot'];
  if (!isSlotName(slot)) throw new HttpError(404, 'unknown_slot', `No slot named ${JSON.stringify(slot)}`);
  return slot;
}

/**
 * The one pin API (PUT /api/placement/:slot/pin and its alias PUT /api/runtime/pins/:slot): the body checked
 * field by field at the boundary (400 invalid_pin), then the runtime's own checks against this board (400
 * invalid_request for a backend it does not know, with the ones it allows; 409 backend_unusable).
 */
async function putPin(
  ctx: RequestContext,
  pin: (slot: SlotName, constraints: SlotConstraints, author: string) => Promise<unknown>,
): Promise<void> {
  const slot = slotParam(ctx);
  const constraints = parsePinBody(await ctx.readJson());
  try {
    await pin(slot, constraints, authorOf(ctx));
  } catch (err) {
    toHttp(err);
  }
  ctx.json(200, { ok: true, slot, pinned: constraints });
}

async function deletePin(
  ctx: RequestContext,
  unpin: (slot: SlotName, author: string) => Promise<unknown>,
): Promise<void> {
  const slot = slotParam(ctx);
  await unpin(slot, authorOf(ctx));
  ctx.json(200, { ok: true, slot });
}

/** The dashboard's placement API; returns the removers of its routes. */
export function registerPlacementRoutes(
  router: HttpRouter,
  port: PlacementPort | undefined,
  engine: () => unknown,
): (() => void)[] {
  const placementPort = () => {
    if (port === undefined) {
      throw new HttpError(
        503,
        'runtime_unavailable',
        'The model runtime is not running on this agent, so nothing is placed',
      );
    }
    return port;
  };
  return [
    router.route('GET', '/api/placement', (ctx) => {
      ctx.json(200, { engine: engine(), ...placementPort().view() });
    }),
    router.route('PUT', '/api/placement/:slot/pin', (ctx) =>
      putPin(ctx, (slot, constraints, author) => placementPort().pin(slot, constraints, author)),
    ),
    router.route('DELETE', '/api/placement/:slot/pin', (ctx) =>
      deletePin(ctx, (slot, author) => placementPort().unpin(slot, author)),
    ),
    router.route('POST', '/api/placement/replan', async (ctx) => {
      await placementPort().replan(`requested by ${authorOf(ctx)}`);
      ctx.json(200, { ok: true });
    }),
  ];
}
