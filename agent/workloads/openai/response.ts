import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import type { RequestContext } from '../../http/router.js';
import type { ChatResult, ChatStream } from '../shared/chat-model.js';
import { type OpenAiFinish, openAiFinish } from './finish.js';
import { type OpenAiToolCallDelta, openAiToolCalls, type ToolDeltaSink } from './tool-deltas.js';

// The two shapes of a chat completion's answer: one JSON body once the model finished, or server-sent events
// (chat.completion.chunk) as the tokens come, ending with `[DONE]`.

/** What every answer of one completion carries. */
export interface CompletionMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
}

function usage(r: ChatResult) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.generatedTokens,
    total_tokens: r.promptTokens + r.generatedTokens,
    // OpenAI's prompt caching field: prompt tokens whose KV the engine kept from the conversation's earlier turns.
    ...(r.reuse ? { prompt_tokens_details: { cached_tokens: r.reuse.reusedTokens } } : {}),
  };
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** `stream: false`: waits for the whole text, then answers one chat.completion. */
export async function answerWhole(
  ctx: RequestContext,
  stream: ChatStream,
  meta: CompletionMeta,
  options: { parallelToolCalls: boolean } = { parallelToolCalls: true },
): Promise<void> {
  for await (const _ of stream) {
    // collected by the stream's result
  }
  const r = await stream.result;
  const toolCalls = openAiToolCalls(r, options.parallelToolCalls);
  // OpenAI's content is null beside calls when the model wrote no text.
  const content = toolCalls.length > 0 && r.text.trim() === '' ? null : r.text;
  ctx.json(200, {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        logprobs: null,
        ...openAiFinish(r),
      },
    ],
    usage: usage(r),
  });
}

/** `stream: true`: server-sent chunks; a failure after the headers went out is reported in-band. */
export async function answerStreamed(
  ctx: RequestContext,
  stream: ChatStream,
  meta: CompletionMeta,
  options: { includeUsage: boolean; signal: AbortSignal; toolDeltas?: ToolDeltaSink },
): Promise<void> {
  type Delta = { role?: 'assistant'; content?: string; tool_calls?: OpenAiToolCallDelta[] };
  const chunk = (delta: Delta, finish: OpenAiFinish | null) => ({
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
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
  options.toolDeltas?.open((d) => sse(ctx.res, chunk({ tool_calls: [d] }, null)));
  try {
    for (let step = first; !step.done; step = await iterator.next())
      sse(ctx.res, chunk({ content: step.value }, null));
  } catch (err) {
    // Headers are gone: report in-band, as OpenAI does, and end the stream.
    if (!options.signal.aborted)
      sse(ctx.res, { error: { message: errorMessage(err), type: 'server_error', param: null, code: null } });
    ctx.res.end();
    return;
  }
  const r = await stream.result;
  sse(ctx.res, chunk({}, openAiFinish(r)));
  if (options.includeUsage)
    sse(ctx.res, {
      id: meta.id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      choices: [],
      usage: usage(r),
    });
  sse(ctx.res, '[DONE]');
  ctx.res.end();
}
