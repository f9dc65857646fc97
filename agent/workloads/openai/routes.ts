// OpenAI-compatible endpoints on the agent's port, behind its auth (Authorization: Bearer <pairing token>):
// GET /v1/models and POST /v1/chat/completions, streamed as server-sent events or answered whole. Any OpenAI
// client library works against http://<device>:8080/v1 with the pairing token as its API key.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../common/errors.js';
import { HttpError } from '../../common/http-error.js';
import type { Logger } from '../../common/log.js';
import type { HttpRouter, RequestContext } from '../../http/router.js';
import type { ChatModel, ChatResult } from '../chat-model.js';
import { WorkloadError } from '../errors.js';
import type { SlotGate } from '../scheduler.js';
import type { RgbFrame } from '../vision/image.js';
import { invalidRequest, OpenAiError, sendOpenAiError } from './errors.js';
import { type OpenAiFinish, openAiFinish } from './finish.js';
import { type ChatCompletionRequest, decodeDataUrl, parseChatCompletionRequest } from './request.js';

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

function toOpenAiError(err: unknown): OpenAiError {
  if (err instanceof OpenAiError) return err;
  if (err instanceof HttpError) {
    const type = err.status === 401 ? 'authentication_error' : 'invalid_request_error';
    return new OpenAiError(err.status, type, err.message, { code: err.code, headers: err.headers });
  }
  if (err instanceof WorkloadError) {
    switch (err.code) {
      case 'EBUSY': {
        const retry = String(err.details?.['retryAfterS'] ?? 1);
        return new OpenAiError(429, 'rate_limit_error', err.message, {
          code: 'model_busy',
          headers: { 'Retry-After': retry },
        });
      }
      case 'ENOENGINE':
        return new OpenAiError(503, 'service_unavailable', err.message, { code: 'engine_unavailable' });
      case 'EFRAME':
        return new OpenAiError(400, 'invalid_request_error', err.message, { code: 'invalid_image' });
      case 'ENOMODEL':
        return new OpenAiError(400, 'invalid_request_error', err.message, { code: 'model_not_capable' });
      default:
        break;
    }
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 'EINVAL') return new OpenAiError(400, 'invalid_request_error', errorMessage(err));
  return new OpenAiError(500, 'server_error', `The model failed: ${errorMessage(err)}`);
}

function usage(r: ChatResult) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.generatedTokens,
    total_tokens: r.promptTokens + r.generatedTokens,
  };
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

export function registerOpenAiRoutes(deps: OpenAiRoutesDeps): () => void {
  const { router } = deps;

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
    let request: ChatCompletionRequest;
    let body: unknown;
    try {
      const bytes = await ctx.readBody();
      try {
        body = JSON.parse(bytes.toString('utf8'));
      } catch (err) {
        throw invalidRequest(`The request body is not valid JSON: ${errorMessage(err)}`);
      }
      request = parseChatCompletionRequest(body);
    } catch (err) {
      return sendOpenAiError(ctx.res, toOpenAiError(err));
    }
    const entry = deps.models().find((m) => m.id === request.model);
    if (!entry) {
      return sendOpenAiError(
        ctx.res,
        new OpenAiError(
          404,
          'not_found_error',
          `The model '${request.model}' does not exist on this device`,
          {
            param: 'model',
            code: 'model_not_found',
          },
        ),
      );
    }
    const controller = new AbortController();
    ctx.res.on('close', () => {
      if (!ctx.res.writableFinished) controller.abort(new WorkloadError('ECANCELLED', 'client disconnected'));
    });
    let release: (() => void) | undefined;
    try {
      const images = await Promise.all(
        request.images.map(async (part) => {
          const bytes = decodeDataUrl(part, deps.maxImageBytes);
          try {
            return await deps.decodeImage(bytes);
          } catch (err) {
            throw invalidRequest(`${part.param}: ${errorMessage(err)}`, part.param, 'invalid_image');
          }
        }),
      );
      release = await entry.gate.acquire(controller.signal);
      const model = await entry.open();
      if (images.length > 0 && !model.capabilities.vision) {
        throw invalidRequest(
          `The model '${entry.id}' does not accept images`,
          'messages',
          'model_not_vision',
        );
      }
      const stream = model.generate({
        messages: request.messages,
        ...(images.length > 0
          ? { images: images.map((f) => ({ data: f.data, width: f.width, height: f.height })) }
          : {}),
        ...(request.maxTokens !== undefined ? { maxNewTokens: request.maxTokens } : {}),
        signal: controller.signal,
      });
      const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
      const created = Math.floor(deps.nowMs() / 1000);
      if (!request.stream) {
        for await (const _ of stream) {
          // collected by the stream's result
        }
        const r = await stream.result;
        ctx.json(200, {
          id,
          object: 'chat.completion',
          created,
          model: entry.id,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: r.text },
              logprobs: null,
              ...openAiFinish(r),
            },
          ],
          usage: usage(r),
        });
        return;
      }
      const chunk = (delta: Record<string, string>, finish: OpenAiFinish | null) => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: entry.id,
        choices: [{ index: 0, delta, logprobs: null, ...(finish ?? { finish_reason: null }) }],
      });
      const iterator = stream[Symbol.asyncIterator]();
      // The first piece is awaited before the headers go out, so a failing prefill still gets a proper error.
      const first = await iterator.next();
      ctx.res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      sse(ctx.res, chunk({ role: 'assistant', content: '' }, null));
      try {
        for (let step = first; !step.done; step = await iterator.next())
          sse(ctx.res, chunk({ content: step.value }, null));
      } catch (err) {
        // Headers are gone: report in-band, as OpenAI does, and end the stream.
        if (!controller.signal.aborted)
          sse(ctx.res, {
            error: { message: errorMessage(err), type: 'server_error', param: null, code: null },
          });
        ctx.res.end();
        return;
      }
      const r = await stream.result;
      sse(ctx.res, chunk({}, openAiFinish(r)));
      if (request.includeUsage)
        sse(ctx.res, {
          id,
          object: 'chat.completion.chunk',
          created,
          model: entry.id,
          choices: [],
          usage: usage(r),
        });
      sse(ctx.res, '[DONE]');
      ctx.res.end();
    } catch (err) {
      if (controller.signal.aborted) {
        ctx.res.destroy();
        return;
      }
      const e = toOpenAiError(err);
      if (e.status >= 500) deps.logger.error('chat completion failed', { model: entry.id, err });
      sendOpenAiError(ctx.res, e);
    } finally {
      release?.();
    }
  };

  const removers = [
    router.route('GET', '/v1/models', list),
    router.route('POST', '/v1/chat/completions', complete),
  ];
  return () => {
    for (const r of removers) r();
  };
}
