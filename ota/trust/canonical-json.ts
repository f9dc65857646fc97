// Signatures are computed over bytes, so signer and verifier must serialise the signed document identically.
// This is the RFC 8785 (JCS) subset our documents need: keys sorted by UTF-16 code units, no whitespace, strings
// escaped as JSON.stringify does. Only safe integers are allowed as numbers: floating-point formatting differs
// between implementations, and nothing we sign needs fractions.

import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';

export function canonicalJson(value: unknown): string {
  return encode(value, '(root)', 0);
}

export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

function encode(value: unknown, path: string, depth: number): string {
  if (value === null) return 'null';
  if (depth > INPUT_LIMITS.jsonMaxDepth)
    throw new MnnEdgeError(
      'ECANONICAL',
      `Cannot canonicalise: nested deeper than ${INPUT_LIMITS.jsonMaxDepth} levels`,
    );
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isSafeInteger(value)) {
        throw new MnnEdgeError(
          'ECANONICAL',
          `Cannot canonicalise ${path}: only safe integers are allowed, got ${value}`,
        );
      }
      return String(value);
    case 'object': {
      if (Array.isArray(value))
        return `[${value.map((v, i) => encode(v, `${path}[${i}]`, depth + 1)).join(',')}]`;
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) {
        throw new MnnEdgeError('ECANONICAL', `Cannot canonicalise ${path}: not a plain object`);
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort(compareCodeUnits);
      return `{${keys.map((k) => `${JSON.stringify(k)}:${encode(obj[k], `${path}.${k}`, depth + 1)}`).join(',')}}`;
    }
    default:
      throw new MnnEdgeError('ECANONICAL', `Cannot canonicalise ${path}: unsupported type ${typeof value}`);
  }
}

// Array.prototype.sort's default comparison already orders by UTF-16 code units; spelled out so nobody swaps in
// localeCompare, which would make signatures depend on the signer's locale.
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
