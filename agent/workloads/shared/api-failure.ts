// One reading of a failed API request, shared by the OpenAI and Ollama edges: what went wrong, in the agent's
// terms (an HTTP refusal, a busy slot, no engine, a bad image, tools the model cannot show, a model that cannot
// do the task, an error code, or the model failing). Each edge renders it in its own wire shape and statuses
// (openai/errors.ts, ollama/errors.ts), so that the two cannot drift apart on what counts as whose fault.
import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import { HttpError } from '../../../lib/http-error.js';
import { WorkloadError } from './errors.js';

export type ApiFailure =
  | { kind: 'http'; error: HttpError }
  | { kind: 'busy'; message: string; retryAfterS: string }
  | { kind: 'no-engine' | 'bad-image' | 'tools' | 'not-capable'; message: string }
  /** Any other error with a string code (EINVAL, EUSAGE, EBUSY …): each edge says which are the request's. */
  | { kind: 'coded'; code: string; message: string }
  | { kind: 'failed'; message: string };

const WORKLOAD_KINDS: Partial<Record<string, 'no-engine' | 'bad-image' | 'tools' | 'not-capable'>> = {
  ENOENGINE: 'no-engine',
  EFRAME: 'bad-image',
  // The model's template cannot show tools, or refused the conversation: the request's fault, not the device's.
  ETOOL: 'tools',
  ENOMODEL: 'not-capable',
};

export function apiFailureOf(err: unknown): ApiFailure {
  if (err instanceof HttpError) return { kind: 'http', error: err };
  if (err instanceof WorkloadError) {
    if (err.code === 'EBUSY')
      return { kind: 'busy', message: err.message, retryAfterS: String(err.details?.['retryAfterS'] ?? 1) };
    const kind = WORKLOAD_KINDS[err.code];
    if (kind) return { kind, message: err.message };
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return { kind: 'coded', code, message: errorMessage(err) };
  return { kind: 'failed', message: errorMessage(err) };
}

/** The model failing, as both edges word it. */
export function modelFailed(message: string): string {
  return `The model failed: ${message}`;
}

/** A JSON error body with its status and headers (413 also closes the connection: the body was not read). */
export function sendJsonError(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): void {
  const text = JSON.stringify(body);
  if (status === 413) res.setHeader('Connection', 'close');
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}
