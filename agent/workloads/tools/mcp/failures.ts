// What went wrong with an MCP server, in words a person (and the model) can act on: which kind of failure it
// was decides whether the connection is dropped and retried later, and the text names it without a stack.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ResponseTooLarge } from './bounded-fetch.js';

export type FailureKind =
  /** The server cannot be reached or the connection broke: drop it and retry with backoff. */
  | 'transport'
  /** The server forgot our session (it restarted): connect again at once. */
  | 'session'
  /** The token was refused: retry with backoff (a person must fix the settings). */
  | 'auth'
  /** The call took longer than its budget; the server is still there. */
  | 'timeout'
  /** The caller gave up (turn cancelled). */
  | 'cancelled'
  /** The server answered more than the size limit. */
  | 'too-large'
  /** The server answered with a protocol error (unknown tool, bad arguments). */
  | 'protocol';

export interface Failure {
  kind: FailureKind;
  text: string;
}

function causeCode(err: Error): string | undefined {
  const cause = (err as { cause?: unknown }).cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return undefined;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

export function describeFailure(err: unknown, budgetMs: number, signal?: AbortSignal): Failure {
  if (signal?.aborted) {
    const reason = signal.reason instanceof Error ? `: ${signal.reason.message}` : '';
    return { kind: 'cancelled', text: `the call was cancelled${reason}` };
  }
  if (err instanceof ResponseTooLarge) return { kind: 'too-large', text: err.message };
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout)
      return { kind: 'timeout', text: `it did not answer within ${seconds(budgetMs)}` };
    if (err.code === ErrorCode.ConnectionClosed)
      return { kind: 'transport', text: 'it closed the connection' };
    return { kind: 'protocol', text: `it answered with an error: ${err.message}` };
  }
  if (err instanceof StreamableHTTPError) {
    if (err.code === 401 || err.code === 403)
      return {
        kind: 'auth',
        text: `it refused the token (HTTP ${err.code}): check the token in voice.tools.mcp`,
      };
    if (err.code === 404)
      return { kind: 'session', text: 'it no longer knows this session (HTTP 404): it probably restarted' };
    return { kind: 'transport', text: `it answered HTTP ${err.code ?? '?'}: ${err.message}` };
  }
  if (err instanceof Error) {
    if (err.name === 'AbortError' || err.name === 'TimeoutError')
      return { kind: 'timeout', text: `it did not answer within ${seconds(budgetMs)}` };
    if (err.name === 'ResponseTooLarge') return { kind: 'too-large', text: err.message };
    if (err.message.startsWith('SSE stream disconnected'))
      return { kind: 'transport', text: `its connection broke (${err.message})` };
    const code = causeCode(err);
    if (err instanceof TypeError || code !== undefined)
      return { kind: 'transport', text: `it cannot be reached (${code ?? err.message})` };
    return { kind: 'transport', text: err.message };
  }
  return { kind: 'transport', text: String(err) };
}

/** A failure that means the connection is no good any more (as opposed to one call going wrong). */
export function dropsConnection(kind: FailureKind): boolean {
  return kind === 'transport' || kind === 'session' || kind === 'auth';
}
