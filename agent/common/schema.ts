// A small validator for the subset of JSON Schema (draft 2020-12) that our documents use. The same schema
// objects are exported to docs/ as JSON, so the device, operators' tools and other consumers agree on them.
// Errors name the path of the bad key and what was expected, which is what a person editing a file needs.

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

function show(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key)
    ? path
      ? `${path}.${key}`
      : key
    : `${path}[${JSON.stringify(key)}]`;
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
  if (schema.const !== undefined && show(schema.const) !== show(value)) {
    errors.push({ path: where, message: `expected ${show(schema.const)}, got ${show(value)}` });
  }
  if (schema.enum && !schema.enum.some((e) => show(e) === show(value))) {
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
      if (obj[key] === undefined) errors.push({ path: join(path, key), message: 'is required but missing' });
    }
    for (const [key, v] of Object.entries(obj)) {
      const sub = schema.properties?.[key];
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
    const err = new Error(`Invalid ${what}: ${formatSchemaErrors(errors)}`) as Error & {
      code: string;
      errors: SchemaError[];
    };
    err.code = 'ESCHEMA';
    err.errors = errors;
    throw err;
  }
  return value as T;
}
