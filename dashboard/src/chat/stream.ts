import type { AssistantChatEvent } from '../../../agent/dashboard-api/wire.js';

// The typed chat's answer as events: POST /api/assistant/chat streams NDJSON, one AssistantChatEvent a line.
// Pure (no DOM), so it is unit tested with hand-cut byte streams: a line split across chunks, a character
// split across chunks, a last line without its newline. A line that is not one of the events the contract
// names ends the stream as an `error` event saying so, rather than being shown as if it were the answer.

/** A line longer than this is not an event the agent sends (a tool result is bounded far below it). */
export const MAX_LINE_CHARS = 4 * 1024 * 1024;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bad(why: string, line: string): AssistantChatEvent {
  const shown = line.length > 120 ? `${line.slice(0, 117)}...` : line;
  return { type: 'error', message: `The agent's answer could not be read: ${why} (${shown})` };
}

/** One NDJSON line as an event; undefined for a type this page does not know (a newer agent's addition). */
export function parseEventLine(line: string): AssistantChatEvent | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return bad('a line is not JSON', line);
  }
  if (!isRecord(v) || typeof v['type'] !== 'string') return bad('a line has no event type', line);
  const str = (k: string) => typeof v[k] === 'string';
  switch (v['type']) {
    case 'text':
      return str('text')
        ? { type: 'text', text: v['text'] as string }
        : bad('a text event has no text', line);
    case 'tool_call':
      if (!str('id') || !str('name')) return bad('a tool call has no id or name', line);
      return {
        type: 'tool_call',
        id: v['id'] as string,
        name: v['name'] as string,
        arguments: isRecord(v['arguments']) ? v['arguments'] : {},
      };
    case 'tool_result':
      if (!str('id') || typeof v['ok'] !== 'boolean') return bad('a tool result has no id or outcome', line);
      return {
        type: 'tool_result',
        id: v['id'] as string,
        ok: v['ok'],
        content: str('content') ? (v['content'] as string) : JSON.stringify(v['content'] ?? ''),
        ms: typeof v['ms'] === 'number' ? v['ms'] : 0,
      };
    case 'done':
      return {
        type: 'done',
        finishReason: str('finishReason') ? (v['finishReason'] as string) : 'stop',
        usage: isRecord(v['usage'])
          ? (v['usage'] as Extract<AssistantChatEvent, { type: 'done' }>['usage'])
          : {},
      };
    case 'error':
      return {
        type: 'error',
        message: str('message') ? (v['message'] as string) : 'The agent reported an error',
      };
    default:
      return undefined;
  }
}

/** The events of an NDJSON body, in order; stops after the first `error` it makes or reads. */
export async function* readChatEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<AssistantChatEvent> {
  const reader = body.getReader();
  // stream: true keeps a character whose bytes are split across chunks for the next chunk.
  const decoder = new TextDecoder();
  let pending = '';
  const take = function* (line: string): Generator<AssistantChatEvent, boolean> {
    if (line.trim() === '') return false;
    const event = parseEventLine(line);
    if (event) yield event;
    return event?.type === 'error';
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl = pending.indexOf('\n');
      while (nl !== -1) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (yield* take(line)) return;
        nl = pending.indexOf('\n');
      }
      if (pending.length > MAX_LINE_CHARS) {
        yield bad(`a line is longer than ${MAX_LINE_CHARS} characters`, pending);
        return;
      }
      if (done) {
        yield* take(pending);
        return;
      }
    }
  } finally {
    // The page stopped reading (Stop, a new conversation, an error): the request is not needed any more.
    await reader.cancel().catch(() => undefined);
  }
}
