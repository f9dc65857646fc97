// An Ollama-compatible API on the agent's port, behind its auth (Authorization: Bearer <pairing token>, which
// is what Home Assistant's Ollama integration sends from its API-key field): the model list (/api/tags), its
// details (/api/show), what is loaded (/api/ps), chat and completion (/api/chat, /api/generate), hub pulls
// (/api/pull) and /api/version. Home Assistant, Open WebUI and the official `ollama` clients use the board with
// http://<device>:8080 as their Ollama URL, or the optional listener on Ollama's own port (listener.ts).
import { createHash } from 'node:crypto';
import { refusalFor } from '../../http/auth.js';
import type { RequestContext, RouteHandler } from '../../http/router.js';
import { answerHandler } from './answer.js';
import { ContextCap } from './context-cap.js';
import { badRequest, modelNotFound, OllamaError, sendOllamaError, toOllamaError } from './errors.js';
import { findByName, ollamaName } from './names.js';
import { pullHandler } from './pull.js';
import type { OllamaModel, OllamaRoutesDeps } from './types.js';

/**
 * The Ollama version /api/version reports. Clients gate features on it (tools, `think`, the API key), so it is
 * the release whose API this implementation follows, not the agent's own version.
 */
export const OLLAMA_API_VERSION = '0.12.0';

/** Far enough ahead to read as "kept loaded", and still a date every client's parser takes (Ollama's own
 *  `keep_alive: -1` shows a date some three centuries ahead). */
const KEPT_LOADED_YEARS = 290;

function digestOf(m: OllamaModel): string {
  return createHash('sha256')
    .update(`${m.id}@${m.version ?? ''}`)
    .digest('hex');
}

function detailsOf(m: OllamaModel) {
  return {
    parent_model: '',
    format: 'mnn',
    family: m.vision ? 'vlm' : 'llm',
    families: [m.vision ? 'vlm' : 'llm'],
    parameter_size: '',
    quantization_level: '',
  };
}

function listed(m: OllamaModel, nowMs: number) {
  return {
    name: ollamaName(m.id),
    model: ollamaName(m.id),
    modified_at: new Date((m.created || nowMs / 1000) * 1000).toISOString(),
    size: 0,
    digest: digestOf(m),
    details: detailsOf(m),
  };
}

async function modelOfBody(ctx: RequestContext, deps: OllamaRoutesDeps): Promise<OllamaModel | undefined> {
  try {
    const body = (await ctx.readJson()) as Record<string, unknown> | null;
    const name = body?.['model'] ?? body?.['name'];
    if (typeof name !== 'string' || name.trim().length === 0) throw badRequest('model is required');
    const entry = findByName(name.trim(), deps.models());
    if (!entry) throw modelNotFound(name.trim());
    return entry;
  } catch (err) {
    sendOllamaError(ctx.res, toOllamaError(err));
    return undefined;
  }
}

/**
 * The agent's auth (the pairing token as a bearer token, or a dashboard session), checked here rather than by the
 * router so that a refusal reads as Ollama's `{"error": "…"}`: clients show that string, and would show the
 * agent's own error object as "[object Object]".
 */
function authenticated(handler: RouteHandler): RouteHandler {
  return (ctx) => {
    if (ctx.auth !== undefined) return handler(ctx);
    const refusal = refusalFor(ctx.req.headers);
    sendOllamaError(
      ctx.res,
      new OllamaError(401, refusal.message, { 'WWW-Authenticate': refusal.wwwAuthenticate }),
    );
  };
}

export function registerOllamaRoutes(deps: OllamaRoutesDeps): () => void {
  const servable = () => deps.models().filter((m) => m.servable !== false);

  const tags = (ctx: RequestContext) =>
    ctx.json(200, { models: servable().map((m) => listed(m, deps.nowMs())) });

  const ps = (ctx: RequestContext) => {
    const now = deps.nowMs();
    const forever = new Date(now);
    forever.setUTCFullYear(forever.getUTCFullYear() + KEPT_LOADED_YEARS);
    ctx.json(200, {
      models: servable()
        .filter((m) => !deps.slots.parked(m.slot))
        .map((m) => ({
          ...listed(m, now),
          expires_at: new Date(deps.keepAlive.expiresAt(m.slot) ?? forever.getTime()).toISOString(),
          size_vram: 0,
          context_length: deps.slots.contextTokens(m.slot) ?? 0,
        })),
    });
  };

  const show = async (ctx: RequestContext) => {
    const m = await modelOfBody(ctx, deps);
    if (!m) return;
    const context = deps.slots.contextTokens(m.slot) ?? 0;
    ctx.json(200, {
      license: '',
      modelfile: '',
      parameters: `num_ctx ${context}`,
      template: '',
      details: detailsOf(m),
      model_info: {
        'general.architecture': 'mnn',
        'general.basename': m.id,
        'general.version': m.version ?? '',
        'mnn.context_length': context,
      },
      // Tools only where the served model's own chat template shows them (what a request with tools needs).
      capabilities: [
        'completion',
        ...(deps.slots.chat(m.slot).supportsTools?.() !== false ? ['tools'] : []),
        ...(m.vision ? ['vision'] : []),
      ],
      modified_at: listed(m, deps.nowMs()).modified_at,
    });
  };

  const caps = new ContextCap(deps.logger);
  const route = (method: 'GET' | 'POST', path: string, handler: RouteHandler) =>
    deps.router.route(method, path, authenticated(handler), { auth: false });
  const removers = [
    route('GET', '/api/version', (ctx) => ctx.json(200, { version: OLLAMA_API_VERSION })),
    route('GET', '/api/tags', tags),
    route('GET', '/api/ps', ps),
    route('POST', '/api/show', show),
    route('POST', '/api/chat', answerHandler('chat', deps, caps)),
    route('POST', '/api/generate', answerHandler('generate', deps, caps)),
    route('POST', '/api/pull', pullHandler(deps)),
  ];
  return () => {
    for (const r of removers) r();
  };
}
