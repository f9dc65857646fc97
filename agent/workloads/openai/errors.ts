import type { ServerResponse } from 'node:http';

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
