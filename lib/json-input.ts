// Parsing JSON we did not write. Before JSON.parse builds anything: the size is bounded, the bytes must be valid
// UTF-8 (a decoder that silently substitutes U+FFFD would let two different payloads parse to one document),
// and an iterative scan bounds the nesting depth, so a deeply nested document is one clean error instead of a
// stack overflow in whatever walks the result later (JSON.stringify, a validator, a canonicaliser).

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { MnnEdgeError } from './errors.js';
import { INPUT_LIMITS } from './input-limits.js';
import { quoteUntrusted } from './sanitize.js';

export interface JsonInputLimits {
  maxBytes: number;
  maxDepth: number;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Deepest array/object nesting in `text`, stopping as soon as it passes `max` (returns max + 1 then). */
export function jsonNestingDepth(text: string, max: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return deepest;
}

/**
 * Parses untrusted JSON with the shared input limits. `what` names the input in errors ("targets document
 * https://…", "MQTT payload"). Errors: ETOOLARGE, EPAYLOAD (not UTF-8), ETOODEEP, EBADJSON — all one line.
 */
export function parseJsonInput(
  input: Uint8Array | string,
  whatGiven: string,
  limits: Partial<JsonInputLimits> = {},
): unknown {
  // Messages start with `what`: "Configuration file …", not "configuration file …".
  const what = capitalized(whatGiven);
  const maxBytes = limits.maxBytes ?? INPUT_LIMITS.jsonMaxBytes;
  const maxDepth = limits.maxDepth ?? INPUT_LIMITS.jsonMaxDepth;
  const size = typeof input === 'string' ? Buffer.byteLength(input, 'utf8') : input.byteLength;
  if (size > maxBytes) {
    throw new MnnEdgeError('ETOOLARGE', `${what} is ${size} bytes, over the limit of ${maxBytes} bytes`, {
      size,
      limit: maxBytes,
    });
  }
  let text: string;
  if (typeof input === 'string') text = input;
  else {
    try {
      text = strictUtf8.decode(input);
    } catch {
      throw new MnnEdgeError('EPAYLOAD', `${what} is not valid UTF-8 text`);
    }
  }
  const depth = jsonNestingDepth(text, maxDepth);
  if (depth > maxDepth) {
    throw new MnnEdgeError('ETOODEEP', `${what} nests deeper than ${maxDepth} levels`, { limit: maxDepth });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const syntax = quoteUntrusted((err as Error).message);
    throw new MnnEdgeError('EBADJSON', `${what} is not valid JSON: ${syntax}`, { syntax });
  }
}

/** Reads and parses a JSON file with the same limits; a missing or unreadable file is one clear error. */
export function readJsonFile(path: string, what: string, limits: Partial<JsonInputLimits> = {}): unknown {
  const maxBytes = limits.maxBytes ?? INPUT_LIMITS.jsonMaxBytes;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'EIO';
    const why = code === 'ENOENT' ? ' (no such file)' : code === 'EACCES' ? ' (permission denied)' : '';
    throw new MnnEdgeError(
      code === 'ENOENT' ? 'ENOENT' : 'EIO',
      `Cannot read ${what} ${path}: ${code}${why}`,
    );
  }
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes) {
      throw new MnnEdgeError(
        'ETOOLARGE',
        `${capitalized(what)} ${path} is ${size} bytes, over the limit of ${maxBytes} bytes`,
        { size, limit: maxBytes },
      );
    }
    // One byte more than the limit: a file that grew since fstat is still caught.
    const buf = Buffer.alloc(Math.min(size, maxBytes) + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n === buf.length) break;
    }
    return parseJsonInput(buf.subarray(0, n), `${what} ${path}`, { ...limits, maxBytes });
  } catch (err) {
    if (err instanceof MnnEdgeError) throw err;
    throw new MnnEdgeError('EIO', `Cannot read ${what} ${path}: ${(err as Error).message}`);
  } finally {
    closeSync(fd);
  }
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
