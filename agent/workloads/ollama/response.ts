import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import type { ChatResult, ChatStream, ToolCall } from '../shared/chat-model.js';

// The two shapes of an Ollama answer: NDJSON lines as the tokens come (the default), ending with a `done: true`
// line that carries the counts and durations, or that last line alone with the whole text (`stream: false`).
// /api/chat puts text in `message.content`, /api/generate in `response`. Tool calls come complete in one line,
// their arguments as a JSON object, as Ollama sends them.

export type Endpoint = 'chat' | 'generate';

export interface AnswerMeta {
  endpoint: Endpoint;
  /** The name the client used, as Ollama echoes it. */
  model: string;
  nowMs: () => number;
  /** process.hrtime.bigint() when the request arrived, for total_duration. */
  startedNs: bigint;
  /** Nanoseconds spent loading a model that was unloaded. */
  loadNs: number;
  /** Something the request asked for that was adjusted (num_ctx capped): on the last line, beside Ollama's
   *  fields, where clients that do not know it ignore it. */
  warning?: string;
}

/** Thrown when the answer broke off (the engine host died): streamed, it is the last NDJSON line. */
export class CutShort extends Error {}

function cutShortReason(r: ChatResult): string | undefined {
  if (r.finishReason !== 'backend-lost') return undefined;
  return (
    'The answer was cut short: the engine host serving the model was lost' +
    (r.detail ? ` (${r.detail})` : '') +
    '; the next request is served by the fallback'
  );
}

function ollamaToolCalls(calls: readonly ToolCall[]) {
  return calls.map((c, index) => ({ id: c.id, function: { index, name: c.name, arguments: c.arguments } }));
}

function head(meta: AnswerMeta) {
  return { model: meta.model, created_at: new Date(meta.nowMs()).toISOString() };
}

function piece(meta: AnswerMeta, text: string, toolCalls?: readonly ToolCall[]) {
  if (meta.endpoint === 'generate') return { ...head(meta), response: text, done: false };
  return {
    ...head(meta),
    message: {
      role: 'assistant',
      content: text,
      ...(toolCalls && toolCalls.length > 0 ? { tool_calls: ollamaToolCalls(toolCalls) } : {}),
    },
    done: false,
  };
}

function final(meta: AnswerMeta, r: ChatResult, text: string) {
  return {
    ...piece(meta, text),
    done: true,
    done_reason: r.finishReason === 'length' ? 'length' : 'stop',
    total_duration: Number(process.hrtime.bigint() - meta.startedNs),
    load_duration: meta.loadNs,
    prompt_eval_count: r.promptTokens,
    prompt_eval_duration: Math.round(r.prefillMs * 1e6),
    eval_count: r.generatedTokens,
    eval_duration: Math.round(r.decodeMs * 1e6),
    ...(meta.warning !== undefined ? { warning: meta.warning } : {}),
  };
}

/** The answer to a load or unload request (no prompt, no messages). */
export function loadAnswer(meta: AnswerMeta, reason: 'load' | 'unload') {
  const text =
    meta.endpoint === 'generate' ? { response: '' } : { message: { role: 'assistant', content: '' } };
  return {
    ...head(meta),
    ...text,
    done: true,
    done_reason: reason,
    ...(meta.warning !== undefined ? { warning: meta.warning } : {}),
  };
}

/** `stream: false`: waits for the whole answer, then one JSON object. */
export async function answerWhole(stream: ChatStream, meta: AnswerMeta): Promise<Record<string, unknown>> {
  for await (const _ of stream) {
    // collected by the stream's result
  }
  const r = await stream.result;
  const broken = cutShortReason(r);
  if (broken) throw new CutShort(broken);
  const body = final(meta, r, r.text);
  if ('message' in body && r.toolCalls && r.toolCalls.length > 0)
    return { ...body, message: { ...body.message, tool_calls: ollamaToolCalls(r.toolCalls) } };
  return body;
}

function line(res: ServerResponse, data: unknown): void {
  res.write(`${JSON.stringify(data)}\n`);
}

/** The default: NDJSON lines; a failure after the headers went out is the last line, `{"error": …}`. */
export async function answerStreamed(
  res: ServerResponse,
  stream: ChatStream,
  meta: AnswerMeta,
  signal: AbortSignal,
): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  // The first piece is awaited before the headers go out, so a failing prefill still gets a proper status.
  const first = await iterator.next();
  res.writeHead(200, {
    'Content-Type': 'application/x-ndjson',
    'Cache-Control': 'no-store',
    'X-Accel-Buffering': 'no',
  });
  try {
    for (let step = first; !step.done; step = await iterator.next())
      if (step.value.length > 0) line(res, piece(meta, step.value));
    const r = await stream.result;
    const broken = cutShortReason(r);
    if (broken) throw new CutShort(broken);
    // Tool calls come whole, in a line of their own before the closing one (as Ollama sends them).
    if (meta.endpoint === 'chat' && r.toolCalls && r.toolCalls.length > 0)
      line(res, piece(meta, '', r.toolCalls));
    line(res, final(meta, r, ''));
  } catch (err) {
    if (!signal.aborted) line(res, { error: errorMessage(err) });
  }
  res.end();
}
