import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import { HttpError } from '../../../lib/http-error.js';
import { WorkloadError } from '../shared/errors.js';

// OpenAI's error body, so OpenAI SDKs surface the message, type and offending parameter as they would against
// api.openai.com: { "error": { "message", "type", "param", "code" } }.

export type OpenAiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable';

export class OpenAiError extends Error {
  readonly status: number;
  readonly type: OpenAiErrorType;
  readonly param: string | null;
  readonly code: string | null;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    type: OpenAiErrorType,
    message: string,
    options: { param?: string; code?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'OpenAiError';
    this.status = status;
    this.type = type;
    this.param = options.param ?? null;
    this.code = options.code ?? null;
    this.headers = options.headers ?? {};
  }
}

export function invalidRequest(message: string, param?: string, code?: string): OpenAiError {
  return new OpenAiError(400, 'invalid_request_error', message, {
    ...(param !== undefined ? { param } : {}),
    ...(code !== undefined ? { code } : {}),
  });
}

export function sendOpenAiError(res: ServerResponse, err: OpenAiError): void {
  const body = JSON.stringify({
    error: { message: err.message, type: err.type, param: err.param, code: err.code },
  });
  if (err.status === 413) res.setHeader('Connection', 'close');
  res.writeHead(err.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    ...err.headers,
  });
  res.end(body);
}

/** What any failure of a request looks like to an OpenAI client: the status, type and code it expects. */
export function toOpenAiError(err: unknown): OpenAiError {
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
      case 'ETOOL':
        // The model's template cannot show tools, or refused the conversation: the request, not the device.
        return new OpenAiError(400, 'invalid_request_error', err.message, {
          param: 'tools',
          code: 'tools_not_supported',
        });
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
