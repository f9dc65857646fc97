// One tool call, bounded: an unknown tool, arguments over the limit, a throw, a timeout or a result too large all
// become an outcome the model reads as data, never an exception out of the turn. A source that ignores the abort
// signal is raced, so a hung call costs at most the call timeout.
import { errorMessage } from '../../../lib/errors.js';
import type { ToolCall } from '../shared/chat-model.js';
import type { ToolCatalog } from './catalog.js';
import type { ToolOutcome } from './types.js';

/** How a call ended, as counted in telemetry and shown in turn details. */
export type CallOutcome = 'ok' | 'error' | 'timeout' | 'unknown-tool' | 'bad-arguments' | 'cancelled';

export interface ToolCallRecord {
  id: string;
  /** The name the model called (a clash makes it `<source>_<tool>`). */
  name: string;
  /** The source that ran it; absent for an unknown tool. */
  source?: string;
  arguments: Record<string, unknown>;
  ok: boolean;
  outcome: CallOutcome;
  /** What the model read: the result or the error, cut to the size limit. */
  content: string;
  truncated: boolean;
  ms: number;
  /** The round of the turn (0 = the first model call). */
  round: number;
}

export interface CallLimits {
  callTimeoutMs: number;
  maxResultBytes: number;
  /** A call's arguments as JSON, at most this many bytes. */
  maxArgumentBytes: number;
}

/** `text` cut to at most `maxBytes` UTF-8 bytes on a character boundary, with a note the model can read. */
export function boundText(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { text, truncated: false };
  const note = `\n[result cut: ${bytes} bytes, the limit is ${maxBytes}]`;
  const room = Math.max(0, maxBytes - Buffer.byteLength(note));
  let cut = Buffer.from(text).subarray(0, room).toString('utf8');
  // A multi-byte character cut in half decodes as U+FFFD: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return { text: cut + note, truncated: true };
}

class CallTimeout extends Error {}

function withTimeout(
  run: (signal: AbortSignal) => Promise<ToolOutcome>,
  timeoutMs: number,
  turn: AbortSignal,
): Promise<ToolOutcome> {
  const timer = new AbortController();
  const signal = AbortSignal.any([turn, timer.signal]);
  return new Promise<ToolOutcome>((resolve, reject) => {
    const onAbort = () =>
      reject(turn.aborted ? turn.reason : new CallTimeout(`no answer within ${timeoutMs} ms`));
    const t = setTimeout(() => timer.abort(), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    run(signal)
      .then(resolve, reject)
      .finally(() => {
        clearTimeout(t);
        signal.removeEventListener('abort', onAbort);
      });
  });
}

export async function runCall(
  call: ToolCall,
  catalog: ToolCatalog,
  context: { signal: AbortSignal; remote: boolean; round: number; now: () => number },
  limits: CallLimits,
): Promise<ToolCallRecord> {
  const started = context.now();
  const entry = catalog.entries.get(call.name);
  const base = { id: call.id, name: call.name, arguments: call.arguments, round: context.round };
  const fail = (outcome: CallOutcome, message: string): ToolCallRecord => {
    const bounded = boundText(`Error: ${message}`, limits.maxResultBytes);
    return {
      ...base,
      ...(entry ? { source: entry.source.name } : {}),
      ok: false,
      outcome,
      content: bounded.text,
      truncated: bounded.truncated,
      ms: context.now() - started,
    };
  };
  if (!entry) {
    const known = [...catalog.entries.keys()].join(', ') || 'none';
    return fail('unknown-tool', `there is no tool named ${JSON.stringify(call.name)} (tools: ${known})`);
  }
  const args = call.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return fail('bad-arguments', `the arguments of ${call.name} must be a JSON object`);
  const argBytes = Buffer.byteLength(JSON.stringify(args));
  if (argBytes > limits.maxArgumentBytes)
    return fail(
      'bad-arguments',
      `the arguments of ${call.name} are ${argBytes} bytes, over the limit of ${limits.maxArgumentBytes}`,
    );
  let outcome: ToolOutcome;
  try {
    outcome = await withTimeout(
      (signal) => entry.source.call(entry.tool, args, { signal, remote: context.remote }),
      limits.callTimeoutMs,
      context.signal,
    );
  } catch (err) {
    if (err instanceof CallTimeout)
      return fail('timeout', `${call.name} timed out: ${err.message}. Tell the user it did not answer.`);
    if (context.signal.aborted) return fail('cancelled', `${call.name} was cancelled: the turn ended`);
    return fail('error', `${call.name} failed: ${errorMessage(err)}. Tell the user it failed.`);
  }
  const content = typeof outcome?.content === 'string' ? outcome.content : '';
  if (outcome?.ok !== true)
    return fail('error', `${call.name} failed: ${content || 'no reason given'}. Tell the user it failed.`);
  const bounded = boundText(content, limits.maxResultBytes);
  return {
    ...base,
    source: entry.source.name,
    ok: true,
    outcome: 'ok',
    content: bounded.text,
    truncated: bounded.truncated,
    ms: context.now() - started,
  };
}
