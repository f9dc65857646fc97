// A small validator for the subset of JSON Schema (draft 2020-12) that our documents use. The same schema
// objects are exported to docs/ as JSON, so the device, operators' tools and other consumers agree on them.
// Errors name the path of the bad key and what was expected, which is what a person editing a file needs.
// Keys of the value are looked up only as own properties: a key named "constructor" or "__proto__" must meet
// `additionalProperties: false` like any other unknown key, not find Object.prototype's members.

import { MnnEdgeError } from './errors.js';
import { INPUT_LIMITS } from './input-limits.js';
import { escapeControl } from './sanitize.js';

export type JsonSchema = {
  $id?: string;
  $schema?: string;
  title?: string;
  description?: string;
  type?: JsonType | JsonType[];
  enum?: readonly unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
  examples?: unknown[];
  format?: string;
};

type JsonType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

export interface SchemaError {
  path: string;
  message: string;
}

function typeOf(v: unknown): JsonType | 'undefined' | 'other' {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isInteger(v) ? 'integer' : 'number';
    case 'object':
      return 'object';
    case 'undefined':
      return 'undefined';
    default:
      return 'other';
  }
}

function matchesType(v: unknown, t: JsonType): boolean {
  const actual = typeOf(v);
  if (t === 'number') return actual === 'number' || actual === 'integer';
  return actual === t;
}

// Values are previewed, never serialised whole: a value may be nested arbitrarily deep or be huge, and the
// preview ends up in a terminal, so control characters are escaped.
function preview(v: unknown, depth: number): string {
  if (v === undefined) return 'undefined';
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? String(v);
  if (depth >= 2) return Array.isArray(v) ? '[...]' : '{...}';
  if (Array.isArray(v)) {
    const items = v.slice(0, 4).map((x) => preview(x, depth + 1));
    return `[${items.join(',')}${v.length > 4 ? ',...' : ''}]`;
  }
  const keys = Object.keys(v);
  const parts = keys
    .slice(0, 4)
    .map((k) => `${JSON.stringify(k)}:${preview((v as Record<string, unknown>)[k], depth + 1)}`);
  return `{${parts.join(',')}${keys.length > 4 ? ',...' : ''}}`;
}

function show(v: unknown): string {
  const s = preview(v, 0);
  return escapeControl(s.length > 60 ? s.slice(0, 57) + '...' : s);
}

/** Structural equality for const/enum, bounded in depth like everything else that walks input. */
function sameValue(a: unknown, b: unknown, depth = 0): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth > INPUT_LIMITS.jsonMaxDepth) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameValue(x, b[i], depth + 1));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every(
      (k) =>
        Object.hasOwn(b, k) &&
        sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth + 1),
    )
  );
}

/** A property's own sub-schema; never one found on Object.prototype ("constructor", "__proto__", "toString"). */
function ownSchema(props: Record<string, JsonSchema> | undefined, key: string): JsonSchema | undefined {
  return props !== undefined && Object.hasOwn(props, key) ? props[key] : undefined;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key)
    ? path
      ? `${path}.${key}`
      : key
    : `${path}[${escapeControl(JSON.stringify(key.length > 60 ? `${key.slice(0, 57)}...` : key))}]`;
}

export function validate(schema: JsonSchema, value: unknown, path = ''): SchemaError[] {
  const errors: SchemaError[] = [];
  const where = path || '(root)';
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => matchesType(value, t))) {
      errors.push({
        path: where,
        message: `expected ${types.join(' or ')}, got ${typeOf(value)} ${show(value)}`,
      });
      return errors;
    }
  }
  if (schema.const !== undefined && !sameValue(schema.const, value)) {
    errors.push({ path: where, message: `expected ${show(schema.const)}, got ${show(value)}` });
  }
  if (schema.enum && !schema.enum.some((e) => sameValue(e, value))) {
    errors.push({
      path: where,
      message: `expected one of ${schema.enum.map(show).join(', ')}, got ${show(value)}`,
    });
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum)
      errors.push({ path: where, message: `expected a number >= ${schema.minimum}, got ${value}` });
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum)
      errors.push({ path: where, message: `expected a number > ${schema.exclusiveMinimum}, got ${value}` });
    if (schema.maximum !== undefined && value > schema.maximum)
      errors.push({ path: where, message: `expected a number <= ${schema.maximum}, got ${value}` });
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength)
      errors.push({
        path: where,
        message: `expected at least ${schema.minLength} characters, got ${value.length}`,
      });
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      errors.push({
        path: where,
        message: `expected at most ${schema.maxLength} characters, got ${value.length}`,
      });
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value))
      errors.push({
        path: where,
        message: `expected a string matching /${schema.pattern}/, got ${show(value)}`,
      });
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      errors.push({
        path: where,
        message: `expected at least ${schema.minItems} items, got ${value.length}`,
      });
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      errors.push({ path: where, message: `expected at most ${schema.maxItems} items, got ${value.length}` });
    if (schema.items)
      for (const [i, item] of value.entries()) errors.push(...validate(schema.items, item, join(path, i)));
  }
  if (
    typeOf(value) === 'object' &&
    (schema.properties || schema.required || schema.additionalProperties !== undefined)
  ) {
    const obj = value as Record<string, unknown>;
    for (const key of schema.required ?? []) {
      if (!Object.hasOwn(obj, key) || obj[key] === undefined)
        errors.push({ path: join(path, key), message: 'is required but missing' });
    }
    for (const [key, v] of Object.entries(obj)) {
      const sub = ownSchema(schema.properties, key);
      if (sub) errors.push(...validate(sub, v, join(path, key)));
      else if (schema.additionalProperties === false) {
        const known = Object.keys(schema.properties ?? {});
        errors.push({
          path: join(path, key),
          message: `is not a known key${known.length ? ` (expected one of: ${known.join(', ')})` : ''}`,
        });
      } else if (typeof schema.additionalProperties === 'object') {
        errors.push(...validate(schema.additionalProperties, v, join(path, key)));
      }
    }
  }
  if (schema.anyOf && !schema.anyOf.some((s) => validate(s, value, path).length === 0)) {
    // Report the branch the value was closest to: one whose type it has beats one it only has fewer errors for.
    const typeMismatch = (errs: SchemaError[]) =>
      errs.some((e) => e.path === where && /^expected [a-z]+( or [a-z]+)*, got /.test(e.message));
    const rank = (errs: SchemaError[]) => errs.length + (typeMismatch(errs) ? 1000 : 0);
    const first = schema.anyOf.map((s) => validate(s, value, path)).sort((a, b) => rank(a) - rank(b))[0];
    errors.push(...(first ?? [{ path: where, message: 'matches none of the allowed forms' }]));
  }
  if (schema.oneOf) {
    const matching = schema.oneOf.filter((s) => validate(s, value, path).length === 0).length;
    if (matching !== 1) {
      errors.push({
        path: where,
        message: matching === 0 ? 'matches none of the allowed forms' : 'matches more than one form',
      });
    }
  }
  return errors;
}

export function formatSchemaErrors(errors: SchemaError[]): string {
  return errors.map((e) => `${e.path}: ${e.message}`).join('; ');
}

/** Validate and narrow; throws one error listing every problem. */
export function assertValid<T>(schema: JsonSchema, value: unknown, what: string): T {
  const errors = validate(schema, value);
  if (errors.length > 0) {
    throw new MnnEdgeError('ESCHEMA', `Invalid ${what}: ${formatSchemaErrors(errors)}`, { errors });
  }
  return value as T;
}
