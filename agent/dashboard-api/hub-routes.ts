import type { WebSocket } from 'ws';
import type { Clock } from '../../lib/clock.js';
import { MnnEdgeError } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { quoteUntrusted } from '../../lib/sanitize.js';
import { assertValid } from '../../lib/schema.js';
import { PULL_MODEL_PARAMS, type PullModelParams } from '../../models/hub/pull-command.js';
import type { PullJobView } from '../../models/hub/pull-jobs.js';
import { pullErrorHint } from '../../models/hub/pull-jobs.js';
import { intParam } from '../http/query.js';
import type { HttpRouter, RequestContext } from '../http/router.js';
import { MessageRateLimiter, type SessionLimiter, WS_CLOSE } from '../http/session-limits.js';
import type { HubPort } from './ports.js';

// "Get models" on the dashboard: search a hub, the recommended list for this board, and pulls (start, list,
// cancel, and a socket that pushes every pull's progress). Authenticated like every API route; the pull body
// goes through the shared JSON parser (size, UTF-8, depth) and the fleet command's own schema.

export interface HubRouteKit {
  router: HttpRouter;
  hub: HubPort | undefined;
  clock: Clock;
  removers: Array<() => void>;
  sessions: SessionLimiter;
  wsRate: number;
  liveSockets: Set<WebSocket>;
}

/** Search words: at most this many, each at most WORD_MAX characters. */
const WORDS_MAX = 8;
const WORD_MAX = 64;
/** A socket backed up past this skips progress views (never a pull's final state). */
const BACKLOG_BYTES = 256 * 1024;

function sourceParam(ctx: RequestContext): 'hf' | 'ms' {
  const s = ctx.url.searchParams.get('source') ?? 'hf';
  if (s !== 'hf' && s !== 'ms')
    throw new HttpError(
      400,
      'invalid_parameter',
      `Query parameter source must be hf (Hugging Face) or ms (ModelScope), got ${JSON.stringify(quoteUntrusted(s))}`,
    );
  return s;
}

function wordsParam(ctx: RequestContext): string[] {
  const q = ctx.url.searchParams.get('q') ?? '';
  // The shared bound on quoted untrusted text: a query longer than that is not a model name.
  if (q.length > INPUT_LIMITS.quotedTextMaxChars)
    throw new HttpError(
      400,
      'invalid_parameter',
      `Search text is at most ${INPUT_LIMITS.quotedTextMaxChars} characters, got ${q.length}`,
    );
  const words = q.split(/\s+/).filter(Boolean);
  if (words.length > WORDS_MAX)
    throw new HttpError(
      400,
      'invalid_parameter',
      `Search with at most ${WORDS_MAX} words, got ${words.length}`,
    );
  // Letters, digits and the punctuation of model names; nothing that could change the hub's query.
  for (const w of words)
    if (w.length > WORD_MAX || !/^[\p{L}\p{N}._+-]+$/u.test(w))
      throw new HttpError(
        400,
        'invalid_parameter',
        `Search words are letters, digits and . _ + - (at most ${WORD_MAX} each), got ${JSON.stringify(quoteUntrusted(w))}`,
      );
  return words;
}

/** A hub's failure as the page shows it: its message and what to do. Upstream problems are 502s. */
function hubHttpError(err: unknown): never {
  if (err instanceof HttpError) throw err;
  if (err instanceof MnnEdgeError) {
    const hint = pullErrorHint(err.code, err.details as Record<string, unknown> | undefined);
    const message = hint !== undefined ? `${err.message}. ${hint}` : err.message;
    if (err.code === 'EUNAVAILABLE' || err.code === 'EHUBURL')
      throw new HttpError(503, 'hub_unavailable', message);
    if (err.code === 'EHUBAUTH') throw new HttpError(502, 'hub_refused', message);
    if (err.code === 'EHUBNOTFOUND') throw new HttpError(502, 'hub_not_found', message);
    if (err.code.startsWith('EHUB')) throw new HttpError(502, 'hub_unreachable', message);
  }
  throw err;
}

function pullHttpError(err: unknown): never {
  if (err instanceof MnnEdgeError) {
    if (err.code === 'ESCHEMA' || err.code === 'EUSAGE')
      throw new HttpError(400, 'invalid_request', err.message);
    if (err.code === 'EBUSY') throw new HttpError(409, 'pull_in_progress', err.message);
    if (err.code === 'ENOENT') throw new HttpError(404, 'unknown_pull', err.message);
    if (err.code === 'EUNAVAILABLE') throw new HttpError(503, 'models_unavailable', err.message);
    // A hub endpoint the configuration names but that cannot be used (not https, credentials in the URL).
    if (err.code.startsWith('EHUB')) throw new HttpError(503, 'hub_unavailable', err.message);
  }
  throw err;
}

function requester(ctx: RequestContext): string {
  return `dashboard (${ctx.auth?.method ?? 'anonymous'} from ${ctx.req.socket.remoteAddress ?? 'unknown'})`;
}

/** Aborted when the browser goes away, so a search it no longer waits for stops asking the hub. */
function clientGone(ctx: RequestContext): AbortSignal {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort(new Error('client went away'));
  });
  return controller.signal;
}

export function registerHubRoutes(kit: HubRouteKit): void {
  const { router, removers } = kit;
  const port = (): HubPort => {
    if (kit.hub === undefined)
      throw new HttpError(503, 'hub_unavailable', 'Model hub pulls are not available on this agent');
    return kit.hub;
  };
  const route = (
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    handler: (ctx: RequestContext) => void | Promise<void>,
  ) => removers.push(router.route(method, path, handler));

  route('GET', '/api/hub/sources', (ctx) => ctx.json(200, { sources: port().sources() }));
  route('GET', '/api/hub/search', async (ctx) => {
    const p = port();
    const query = {
      source: sourceParam(ctx),
      words: wordsParam(ctx),
      limit: intParam(ctx.url, 'limit', { min: 1, max: 50, fallback: 20 }),
    };
    try {
      ctx.json(200, { source: query.source, ...(await p.search(query, clientGone(ctx))) });
    } catch (err) {
      hubHttpError(err);
    }
  });
  route('GET', '/api/hub/recommend', async (ctx) => {
    const p = port();
    const query = {
      source: sourceParam(ctx),
      limit: intParam(ctx.url, 'limit', { min: 1, max: 50, fallback: 30 }),
    };
    try {
      ctx.json(200, { source: query.source, ...(await p.recommend(query, clientGone(ctx))) });
    } catch (err) {
      hubHttpError(err);
    }
  });
  route('GET', '/api/hub/pulls', (ctx) => ctx.json(200, { pulls: port().pulls.list() }));
  route('POST', '/api/hub/pulls', async (ctx) => {
    const p = port();
    try {
      const body = assertValid<PullModelParams>(PULL_MODEL_PARAMS, await ctx.readJson(), 'pull request');
      const { view } = p.pulls.start(body.source, {
        ...(body.id !== undefined ? { id: body.id } : {}),
        ...(body.version !== undefined ? { version: body.version } : {}),
        requestedBy: requester(ctx),
      });
      ctx.json(202, { pull: view });
    } catch (err) {
      pullHttpError(err);
    }
  });
  route('DELETE', '/api/hub/pulls/:id', async (ctx) => {
    const p = port();
    const id = ctx.params['id'] ?? '';
    if (!/^p\d{1,9}$/.test(id))
      throw new HttpError(404, 'unknown_pull', `No pull ${JSON.stringify(quoteUntrusted(id))}`);
    try {
      ctx.json(200, { pull: await p.pulls.cancel(id) });
    } catch (err) {
      pullHttpError(err);
    }
  });

  removers.push(
    router.upgrade('/api/hub/pulls/live', (ws, up) => {
      if (kit.hub === undefined) {
        ws.close(1011, 'Model hub pulls are not available on this agent');
        return;
      }
      const release = kit.sessions.tryAcquire({
        kind: 'dashboard model pulls',
        who: up.req.socket.remoteAddress ?? 'unknown',
      });
      if (release === undefined) {
        ws.close(WS_CLOSE.tooManySessions, kit.sessions.refusal().slice(0, 120));
        return;
      }
      kit.liveSockets.add(ws);
      const limiter = new MessageRateLimiter(kit.clock, kit.wsRate, kit.wsRate * 2);
      const send = (pull: PullJobView) => {
        const final = pull.state !== 'running' && pull.state !== 'cancelling';
        if (!final && ws.bufferedAmount > BACKLOG_BYTES) return;
        ws.send(JSON.stringify({ type: 'pull', pull }));
      };
      const unsubscribe = kit.hub.pulls.subscribe(send);
      ws.send(JSON.stringify({ type: 'pulls', pulls: kit.hub.pulls.list() }));
      // The page only listens; anything it sends counts against the rate limit and is otherwise ignored.
      ws.on('message', () => {
        if (!limiter.take()) ws.close(WS_CLOSE.rateLimited, limiter.describe().slice(0, 120));
      });
      ws.on('close', () => {
        unsubscribe();
        release();
        kit.liveSockets.delete(ws);
      });
    }),
  );
}
