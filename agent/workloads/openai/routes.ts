// OpenAI-compatible endpoints on the agent's port, behind its auth (Authorization: Bearer <pairing token>):
// GET /v1/models and POST /v1/chat/completions, streamed as server-sent events or answered whole. Any OpenAI
// client library works against http://<device>:8080/v1 with the pairing token as its API key.
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { HttpRouter, RequestContext } from '../../http/router.js';
import type { ChatModel } from '../shared/chat-model.js';
import { WorkloadError } from '../shared/errors.js';
import type { SlotGate } from '../slots/scheduler.js';
import type { RgbFrame } from '../vision/image.js';
import { invalidRequest, OpenAiError, sendOpenAiError, toOpenAiError } from './errors.js';
import { type ChatCompletionRequest, decodeDataUrl, parseChatCompletionRequest } from './request.js';
import { answerStreamed, answerWhole } from './response.js';
import { ToolDeltaSink } from './tool-deltas.js';

export interface OpenAiModel {
  id: string;
  /** Unix seconds, as OpenAI reports it (install time of the model). */
  created: number;
  open(): Promise<ChatModel>;
  /** Whether it can answer now. One that cannot (no engine, failed to load) is left out of /v1/models but still
   *  resolves by name, so asking it says why (503) rather than that it does not exist. Default: true. */
  servable?: boolean;
  /** Shared with the workload that uses the same slot, so API traffic counts against its limit. */
  gate: SlotGate;
}

export interface OpenAiRoutesDeps {
  router: HttpRouter;
  models: () => readonly OpenAiModel[];
  maxImageBytes: number;
  /** Bytes of any supported image → RGB, scaled for the model. */
  decodeImage: (bytes: Uint8Array) => Promise<RgbFrame>;
  nowMs: () => number;
  logger: Logger;
}

/** The body as a validated request; undefined once an error answer went out. */
async function readRequest(ctx: RequestContext): Promise<ChatCompletionRequest | undefined> {
  try {
    const bytes = await ctx.readBody();
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw invalidRequest(`The request body is not valid JSON: ${errorMessage(err)}`);
    }
    return parseChatCompletionRequest(body);
  } catch (err) {
    sendOpenAiError(ctx.res, toOpenAiError(err));
    return undefined;
  }
}

/** The request's images (data URLs), decoded and scaled for the model; a bad one names its parameter. */
function decodeImages(request: ChatCompletionRequest, deps: OpenAiRoutesDeps): Promise<RgbFrame[]> {
  return Promise.all(
    request.images.map(async (part) => {
      const bytes = decodeDataUrl(part, deps.maxImageBytes);
      try {
        return await deps.decodeImage(bytes);
      } catch (err) {
        throw invalidRequest(`${part.param}: ${errorMessage(err)}`, part.param, 'invalid_image');
      }
    }),
  );
}

/** Admission through the slot's gate, then the model's answer, whole or streamed. */
async function generate(
  ctx: RequestContext,
  request: ChatCompletionRequest,
  entry: OpenAiModel,
  deps: OpenAiRoutesDeps,
  signal: AbortSignal,
): Promise<void> {
  let release: (() => void) | undefined;
  try {
    const images = await decodeImages(request, deps);
    release = await entry.gate.acquire(signal);
    const model = await entry.open();
    if (images.length > 0 && !model.capabilities.vision) {
      throw invalidRequest(`The model '${entry.id}' does not accept images`, 'messages', 'model_not_vision');
    }
    const toolDeltas = request.stream ? new ToolDeltaSink(request.parallelToolCalls) : undefined;
    const stream = model.generate({
      messages: request.messages,
      ...(request.tools.length > 0 ? { tools: request.tools, toolChoice: request.toolChoice } : {}),
      ...(toolDeltas ? { onToolCallDelta: toolDeltas.push } : {}),
      ...(images.length > 0
        ? { images: images.map((f) => ({ data: f.data, width: f.width, height: f.height })) }
        : {}),
      ...(request.maxTokens !== undefined ? { maxNewTokens: request.maxTokens } : {}),
      signal,
    });
    const meta = {
      id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
      created: Math.floor(deps.nowMs() / 1000),
      model: entry.id,
    };
    if (request.stream)
      await answerStreamed(ctx, stream, meta, { includeUsage: request.includeUsage, signal, toolDeltas });
    else await answerWhole(ctx, stream, meta, { parallelToolCalls: request.parallelToolCalls });
    const r = await stream.result.catch(() => undefined);
    if (r?.toolParseErrors?.length)
      deps.logger.warn('tool call markup kept as text', { model: entry.id, reasons: r.toolParseErrors });
  } finally {
    release?.();
  }
}

export function registerOpenAiRoutes(deps: OpenAiRoutesDeps): () => void {
  const list = (ctx: RequestContext) => {
    ctx.json(200, {
      object: 'list',
      data: deps
        .models()
        .filter((m) => m.servable !== false)
        .map((m) => ({ id: m.id, object: 'model', created: m.created, owned_by: 'mnn-edge' })),
    });
  };

  const complete = async (ctx: RequestContext) => {
    const request = await readRequest(ctx);
    if (!request) return;
    const entry = deps.models().find((m) => m.id === request.model);
    if (!entry) {
      const message = `The model '${request.model}' does not exist on this device`;
      const err = new OpenAiError(404, 'not_found_error', message, {
        param: 'model',
        code: 'model_not_found',
      });
      return sendOpenAiError(ctx.res, err);
    }
    const controller = new AbortController();
    ctx.res.on('close', () => {
      if (!ctx.res.writableFinished) controller.abort(new WorkloadError('ECANCELLED', 'client disconnected'));
    });
    try {
      await generate(ctx, request, entry, deps, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) {
        ctx.res.destroy();
        return;
      }
      const e = toOpenAiError(err);
      if (e.status >= 500) deps.logger.error('chat completion failed', { model: entry.id, err });
      sendOpenAiError(ctx.res, e);
    }
  };

  const removers = [
    deps.router.route('GET', '/v1/models', list),
    deps.router.route('POST', '/v1/chat/completions', complete),
  ];
  return () => {
    for (const r of removers) r();
  };
}
