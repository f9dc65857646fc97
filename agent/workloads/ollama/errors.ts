import type { ServerResponse } from 'node:http';
import { errorMessage } from '../../../lib/errors.js';
import { HttpError } from '../../../lib/http-error.js';
import { WorkloadError } from '../shared/errors.js';

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

/** What any failure of a request looks like to an Ollama client. */
export function toOllamaError(err: unknown): OllamaError {
  if (err instanceof OllamaError) return err;
  if (err instanceof HttpError) return new OllamaError(err.status, err.message, err.headers);
  if (err instanceof WorkloadError) {
    switch (err.code) {
      case 'EBUSY':
        return new OllamaError(429, err.message, {
          'Retry-After': String(err.details?.['retryAfterS'] ?? 1),
        });
      case 'ENOENGINE':
        return new OllamaError(503, err.message);
      case 'EFRAME':
      case 'ENOMODEL':
      // The model's template cannot show tools, or refused the conversation: the request's, as Ollama's 400
      // "does not support tools".
      case 'ETOOL':
        return new OllamaError(400, err.message);
      default:
        break;
    }
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 'EINVAL' || code === 'EUSAGE') return new OllamaError(400, errorMessage(err));
  if (code === 'EBUSY') return new OllamaError(429, errorMessage(err));
  return new OllamaError(500, `The model failed: ${errorMessage(err)}`);
}

export function sendOllamaError(res: ServerResponse, err: OllamaError): void {
  const body = JSON.stringify({ error: err.message });
  if (err.status === 413) res.setHeader('Connection', 'close');
  res.writeHead(err.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    ...err.headers,
  });
  res.end(body);
}
