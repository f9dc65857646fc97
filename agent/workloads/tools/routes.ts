// The acting assistant on the agent's router, behind its auth like every /api route:
//
//   POST   /api/assistant/chat        typed chat for the dashboard; NDJSON lines, one event each:
//            {"type":"text","text":"..."}
//            {"type":"tool_call","id":"...","name":"...","arguments":{...}}
//            {"type":"tool_result","id":"...","ok":true,"content":"...","ms":12}
//            {"type":"done","finishReason":"stop","usage":{"promptTokens":..,"generatedTokens":..,"prefillMs":..,"decodeMs":..}}
//            {"type":"error","message":"..."}                  (after the stream started; the stream then ends)
//          A bad request or no model to answer is refused before the stream with a JSON error (400, 503).
//   GET    /api/assistant/timers      {"timers":[...], "events":[...]}
//   DELETE /api/assistant/timers/:id  the cancelled timer, or 404
//
// The chat needs only an LLM: no ASR, no speech. A request with images goes to a model that sees them.
import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import { HttpError } from '../../../lib/http-error.js';
import type { Logger } from '../../../lib/log.js';
import type { HttpRouter, RequestContext } from '../../http/router.js';
import { decodeDataUrl } from '../openai/request.js';
import type { ChatModel } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import type { RgbFrame } from '../vision/image.js';
import type { ActingAssistant, AssistantEvent } from './assistant.js';
import { parseAssistantChatRequest } from './chat-request.js';
import type { TimerService } from './timers.js';

export interface ChatTarget {
  model: ChatModel;
  /** Admission through the slot's gate; the returned function lets go. */
  acquire(signal: AbortSignal): Promise<() => void>;
}

export interface AssistantRoutesDeps {
  router: HttpRouter;
  assistant: ActingAssistant;
  timers: TimerService | undefined;
  /** The model that answers a typed chat (one that sees images when `vision`); a WorkloadError when none. */
  target(vision: boolean): ChatTarget;
  systemPrompt: () => string;
  maxNewTokens: () => number;
  maxImageBytes: number;
  decodeImage: (bytes: Uint8Array) => Promise<RgbFrame>;
  logger: Logger;
}

/** The wire form of an event: exactly the fields of the contract above. */
export function wireEvent(e: AssistantEvent): Record<string, unknown> {
  switch (e.type) {
    case 'text':
      return { type: 'text', text: e.text };
    case 'tool_call':
      return { type: 'tool_call', id: e.id, name: e.name, arguments: e.arguments };
    case 'tool_result':
      return { type: 'tool_result', id: e.id, ok: e.ok, content: e.content, ms: Math.round(e.ms) };
    case 'done':
      return { type: 'done', finishReason: e.finishReason, usage: e.usage };
  }
}

function unavailable(err: unknown): HttpError {
  if (err instanceof WorkloadError && ['ENOMODEL', 'ENOENGINE', 'ESTATE'].includes(err.code))
    return new HttpError(503, err.code.toLowerCase(), err.message);
  if (err instanceof HttpError) return err;
  return new HttpError(500, 'internal', errorMessage(err));
}

function writeLine(res: ServerResponse, line: Record<string, unknown>): void {
  if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(line)}\n`);
}

async function chat(ctx: RequestContext, deps: AssistantRoutesDeps): Promise<void> {
  const request = parseAssistantChatRequest(await ctx.readJson());
  const frames = await Promise.all(
    request.images.map(async (url, i) => {
      const param = `images[${i}]`;
      let bytes: Buffer;
      try {
        bytes = decodeDataUrl({ url, param }, deps.maxImageBytes);
      } catch (err) {
        throw new HttpError(400, 'invalid_image', errorMessage(err));
      }
      try {
        return await deps.decodeImage(bytes);
      } catch (err) {
        throw new HttpError(400, 'invalid_image', `${param}: ${errorMessage(err)}`);
      }
    }),
  );
  let target: ChatTarget;
  try {
    target = deps.target(frames.length > 0);
  } catch (err) {
    throw unavailable(err);
  }
  const controller = new AbortController();
  ctx.res.on('close', () => {
    if (!ctx.res.writableFinished) controller.abort(new WorkloadError('ECANCELLED', 'client disconnected'));
  });
  const release = await target.acquire(controller.signal);
  ctx.res.writeHead(200, {
    'Content-Type': 'application/x-ndjson; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Accel-Buffering': 'no',
  });
  const system = deps.systemPrompt();
  const messages =
    request.messages[0]?.role === 'system' || !system
      ? request.messages
      : [{ role: 'system' as const, content: system }, ...request.messages];
  try {
    await deps.assistant.run(target.model, {
      messages,
      ...(frames.length > 0
        ? { images: frames.map((f) => ({ data: f.data, width: f.width, height: f.height })) }
        : {}),
      maxNewTokens: deps.maxNewTokens(),
      signal: controller.signal,
      // The dashboard is the board's own page, opened with its pairing token: the owner at the board.
      remote: false,
      onEvent: (e) => writeLine(ctx.res, wireEvent(e)),
    });
  } catch (err) {
    if (!controller.signal.aborted) {
      deps.logger.warn('assistant chat failed', {
        conversation: request.conversationId,
        error: errorMessage(err),
      });
      writeLine(ctx.res, { type: 'error', message: errorMessage(err) });
    }
  } finally {
    release();
    if (!ctx.res.writableEnded) ctx.res.end();
  }
}

export function registerAssistantRoutes(deps: AssistantRoutesDeps): () => void {
  const timers = (): TimerService => {
    if (!deps.timers)
      throw new HttpError(503, 'timers_off', 'Timers are switched off (voice.tools.builtins.timers)');
    return deps.timers;
  };
  const removers = [
    deps.router.route('POST', '/api/assistant/chat', (ctx) => chat(ctx, deps)),
    deps.router.route('GET', '/api/assistant/timers', (ctx) => {
      const t = timers();
      ctx.json(200, { timers: t.list(), events: t.events() });
    }),
    deps.router.route('DELETE', '/api/assistant/timers/:id', (ctx) => {
      const id = ctx.params['id'] ?? '';
      const cancelled = timers().cancel(id);
      if (!cancelled) throw new HttpError(404, 'not_found', `No running timer with id ${JSON.stringify(id)}`);
      ctx.json(200, { timer: cancelled });
    }),
  ];
  return () => {
    for (const r of removers) r();
  };
}
