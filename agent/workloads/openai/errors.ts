import type { ServerResponse } from 'node:http';
import { apiFailureOf, modelFailed, sendJsonError } from '../shared/api-failure.js';

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
  sendJsonError(res, err.status, err.headers, {
    error: { message: err.message, type: err.type, param: err.param, code: err.code },
  });
}

/** What any failure of a request looks like to an OpenAI client: the status, type and code it expects. */
export function toOpenAiError(err: unknown): OpenAiError {
  if (err instanceof OpenAiError) return err;
  const f = apiFailureOf(err);
  switch (f.kind) {
    case 'http': {
      const type = f.error.status === 401 ? 'authentication_error' : 'invalid_request_error';
      return new OpenAiError(f.error.status, type, f.error.message, {
        code: f.error.code,
        headers: f.error.headers,
      });
    }
    case 'busy':
      return new OpenAiError(429, 'rate_limit_error', f.message, {
        code: 'model_busy',
        headers: { 'Retry-After': f.retryAfterS },
      });
    case 'no-engine':
      return new OpenAiError(503, 'service_unavailable', f.message, { code: 'engine_unavailable' });
    case 'bad-image':
      return new OpenAiError(400, 'invalid_request_error', f.message, { code: 'invalid_image' });
    case 'tools':
      return new OpenAiError(400, 'invalid_request_error', f.message, {
        param: 'tools',
        code: 'tools_not_supported',
      });
    case 'not-capable':
      return new OpenAiError(400, 'invalid_request_error', f.message, { code: 'model_not_capable' });
    case 'coded':
      if (f.code === 'EINVAL') return new OpenAiError(400, 'invalid_request_error', f.message);
      return new OpenAiError(500, 'server_error', modelFailed(f.message));
    case 'failed':
      return new OpenAiError(500, 'server_error', modelFailed(f.message));
  }
}
