// POST /api/chat and /api/generate: parse, find the model, cap num_ctx to the slot's context, then admission
// through the slot's gate (shared with the voice and vision workloads and the OpenAI API), a load if keep_alive
// had unloaded the model, and the answer — streamed as NDJSON by default, or whole.
import { errorMessage } from '../../../lib/errors.js';
import type { RequestContext } from '../../http/router.js';
import type { SlotName } from '../../plan/types.js';
import type { ChatRequest } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import type { RgbFrame } from '../vision/image.js';
import type { ContextCap } from './context-cap.js';
import { badRequest, modelNotFound, OllamaError, sendOllamaError, toOllamaError } from './errors.js';
import { findByName } from './names.js';
import { decodeBase64Image, type OllamaRequest, parseChatRequest, parseGenerateRequest } from './request.js';
import {
  type AnswerMeta,
  answerStreamed,
  answerWhole,
  CutShort,
  type Endpoint,
  loadAnswer,
} from './response.js';
import type { OllamaModel, OllamaRoutesDeps } from './types.js';

/** The body as a validated request; undefined once an error answer went out. */
async function readRequest(ctx: RequestContext, endpoint: Endpoint): Promise<OllamaRequest | undefined> {
  try {
    const bytes = await ctx.readBody();
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw badRequest(`The request body is not valid JSON: ${errorMessage(err)}`);
    }
    return endpoint === 'chat' ? parseChatRequest(body) : parseGenerateRequest(body);
  } catch (err) {
    sendOllamaError(ctx.res, toOllamaError(err));
    return undefined;
  }
}

function decodeImages(request: OllamaRequest, deps: OllamaRoutesDeps): Promise<RgbFrame[]> {
  return Promise.all(
    request.images.map(async (part) => {
      const bytes = decodeBase64Image(part, deps.maxImageBytes);
      try {
        return await deps.decodeImage(bytes);
      } catch (err) {
        throw badRequest(`${part.param}: ${errorMessage(err)}`);
      }
    }),
  );
}

/** Waits for the slot's model if keep_alive had unloaded it; the nanoseconds it took. */
async function loadIfParked(slot: SlotName, deps: OllamaRoutesDeps, signal: AbortSignal): Promise<number> {
  if (!deps.slots.parked(slot)) return 0;
  const t0 = process.hrtime.bigint();
  await deps.slots.load(slot, signal);
  return Number(process.hrtime.bigint() - t0);
}

/** No prompt and no messages: load the model, or with keep_alive 0 unload it (what `ollama stop` sends). */
async function loadOrUnload(
  ctx: RequestContext,
  request: OllamaRequest,
  entry: OllamaModel,
  meta: AnswerMeta,
  deps: OllamaRoutesDeps,
  signal: AbortSignal,
): Promise<void> {
  let reason: 'load' | 'unload';
  if (request.keepAlive?.kind === 'for' && request.keepAlive.ms === 0) {
    await deps.keepAlive.unloadNow(entry.slot, `Ollama API: ${entry.id} unloaded on request`);
    reason = 'unload';
  } else {
    deps.keepAlive.begin(entry.slot, request.keepAlive);
    try {
      const wasParked = deps.slots.parked(entry.slot);
      const t0 = process.hrtime.bigint();
      await deps.slots.load(entry.slot, signal);
      if (wasParked) meta.loadNs = Number(process.hrtime.bigint() - t0);
    } finally {
      deps.keepAlive.end(entry.slot);
    }
    reason = 'load';
  }
  const body = `${JSON.stringify(loadAnswer(meta, reason))}\n`;
  ctx.res.writeHead(200, {
    'Content-Type': request.stream ? 'application/x-ndjson' : 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  ctx.res.end(body);
}

async function generate(
  ctx: RequestContext,
  request: OllamaRequest,
  entry: OllamaModel,
  meta: AnswerMeta,
  deps: OllamaRoutesDeps,
  signal: AbortSignal,
): Promise<void> {
  const images = await decodeImages(request, deps);
  deps.keepAlive.begin(entry.slot, request.keepAlive);
  let release: (() => void) | undefined;
  try {
    release = await entry.gate.acquire(signal);
    meta.loadNs = await loadIfParked(entry.slot, deps, signal);
    const model = await entry.open();
    if (images.length > 0 && !model.capabilities.vision)
      throw badRequest(`The model "${meta.model}" does not accept images`);
    // num_ctx bounds the answer too: it cannot run past the context the client said it has.
    const maxNewTokens =
      request.maxTokens !== undefined || request.numCtx !== undefined
        ? Math.min(request.maxTokens ?? Number.MAX_SAFE_INTEGER, request.numCtx ?? Number.MAX_SAFE_INTEGER)
        : undefined;
    const chat: ChatRequest = {
      messages: request.messages,
      ...(images.length > 0
        ? { images: images.map((f) => ({ data: f.data, width: f.width, height: f.height })) }
        : {}),
      ...(maxNewTokens !== undefined ? { maxNewTokens } : {}),
      ...(request.tools && request.tools.length > 0 ? { tools: request.tools } : {}),
      signal,
    };
    const stream = model.generate(chat);
    if (request.stream) await answerStreamed(ctx.res, stream, meta, signal);
    else ctx.json(200, await answerWhole(stream, meta));
  } finally {
    release?.();
    deps.keepAlive.end(entry.slot);
  }
}

/** `caps` is shared by both endpoints, so a too-large num_ctx is logged once per model and value. */
export function answerHandler(endpoint: Endpoint, deps: OllamaRoutesDeps, caps: ContextCap) {
  return async (ctx: RequestContext): Promise<void> => {
    const startedNs = process.hrtime.bigint();
    const request = await readRequest(ctx, endpoint);
    if (!request) return;
    const entry = findByName(request.model, deps.models());
    if (!entry) return sendOllamaError(ctx.res, modelNotFound(request.model));
    const controller = new AbortController();
    ctx.res.on('close', () => {
      if (!ctx.res.writableFinished) controller.abort(new WorkloadError('ECANCELLED', 'client disconnected'));
    });
    const meta: AnswerMeta = { endpoint, model: request.model, nowMs: deps.nowMs, startedNs, loadNs: 0 };
    try {
      const fitted = caps.fit(request.numCtx, deps.slots.contextTokens(entry.slot), entry);
      request.numCtx = fitted.numCtx;
      if (fitted.warning !== undefined) meta.warning = fitted.warning;
      if (request.loadOnly) await loadOrUnload(ctx, request, entry, meta, deps, controller.signal);
      else await generate(ctx, request, entry, meta, deps, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) {
        ctx.res.destroy();
        return;
      }
      const e = err instanceof CutShort ? new OllamaError(500, err.message) : toOllamaError(err);
      if (e.status >= 500) deps.logger.error('Ollama API request failed', { model: entry.id, err });
      if (ctx.res.headersSent) ctx.res.end();
      else sendOllamaError(ctx.res, e);
    }
  };
}
