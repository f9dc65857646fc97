import type { ServerResponse } from 'node:http';
import { apiFailureOf, modelFailed, sendJsonError } from '../shared/api-failure.js';

// Ollama's error body is one string, `{"error": "…"}`, with the status codes Ollama itself uses: 400 for a bad
// request, 404 for an unknown model (in Ollama's own words, which clients such as Home Assistant's integration
// show as they are), 429 when the model is busy, 500/503 for the device's faults. Once a stream has started the
// same object goes out as an NDJSON line, which the official clients raise as an error.

export class OllamaError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'OllamaError';
    this.status = status;
    this.headers = headers;
  }
}

export function badRequest(message: string): OllamaError {
  return new OllamaError(400, message);
}

/** Ollama's words for a model it does not have; clients match on them to offer a pull. */
export function modelNotFound(name: string): OllamaError {
  return new OllamaError(404, `model "${name}" not found, try pulling it first`);
}

/** What any failure of a request looks like to an Ollama client (shared/api-failure.ts reads it). */
export function toOllamaError(err: unknown): OllamaError {
  if (err instanceof OllamaError) return err;
  const f = apiFailureOf(err);
  switch (f.kind) {
    case 'http':
      return new OllamaError(f.error.status, f.error.message, f.error.headers);
    case 'busy':
      return new OllamaError(429, f.message, { 'Retry-After': f.retryAfterS });
    case 'no-engine':
      return new OllamaError(503, f.message);
    case 'bad-image':
    case 'not-capable':
    // Tools the template cannot show are the request's, as Ollama's 400 "does not support tools".
    case 'tools':
      return new OllamaError(400, f.message);
    case 'coded':
      if (f.code === 'EINVAL' || f.code === 'EUSAGE') return new OllamaError(400, f.message);
      if (f.code === 'EBUSY') return new OllamaError(429, f.message);
      return new OllamaError(500, modelFailed(f.message));
    case 'failed':
      return new OllamaError(500, modelFailed(f.message));
  }
}

export function sendOllamaError(res: ServerResponse, err: OllamaError): void {
  sendJsonError(res, err.status, err.headers, { error: err.message });
}
