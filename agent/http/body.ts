import type { IncomingMessage } from 'node:http';
import { errorMessage } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import { parseJsonInput } from '../../lib/json-input.js';

// Bodies are buffered, so a client must not be able to make the agent buffer more than the configured limit:
// a declared Content-Length over it is refused before reading, and a chunked body is cut off as it crosses it.

export function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    'payload_too_large',
    `Request body exceeds the limit of ${limit} bytes (http.maxUploadBytes)`,
  );
}

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export function parseJsonBody(body: Buffer, contentType: string | undefined): unknown {
  if (contentType !== undefined && !/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `Expected Content-Type application/json, got ${contentType}`,
    );
  }
  if (body.length === 0) throw new HttpError(400, 'invalid_json', 'Expected a JSON body, got an empty one');
  try {
    // The size was bounded by readBody; UTF-8 and nesting depth by the shared input limits.
    return parseJsonInput(body, 'Request body', { maxBytes: body.length });
  } catch (err) {
    throw new HttpError(400, 'invalid_json', errorMessage(err));
  }
}
