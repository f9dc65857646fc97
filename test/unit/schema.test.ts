import test from 'ava';
import { assertValid, type JsonSchema, validate } from '../../lib/schema.js';

const schema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 5 },
    count: { type: 'integer', minimum: 0, maximum: 3 },
    ratio: { type: 'number', exclusiveMinimum: 0 },
    mode: { enum: ['a', 'b'] },
    items: { type: 'array', maxItems: 2, items: { type: 'string', pattern: '^x' } },
    either: { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 10 }] },
    'odd key': { type: 'boolean' },
  },
};

test('a valid document has no errors', (t) => {
  t.deepEqual(
    validate(schema, { name: 'ok', count: 3, ratio: 0.5, mode: 'a', items: ['x1'], either: 12 }),
    [],
  );
});

test('each violation names its path and what was expected', (t) => {
  t.deepEqual(
    validate(schema, {
      name: '',
      count: 1.5,
      ratio: 0,
      mode: 'c',
      items: ['y', 'x', 'x'],
      either: 3,
      'odd key': 'yes',
      extra: 1,
    }),
    [
      { path: 'name', message: 'expected at least 1 characters, got 0' },
      { path: 'count', message: 'expected integer, got number 1.5' },
      { path: 'ratio', message: 'expected a number > 0, got 0' },
      { path: 'mode', message: 'expected one of "a", "b", got "c"' },
      { path: 'items', message: 'expected at most 2 items, got 3' },
      { path: 'items[0]', message: 'expected a string matching /^x/, got "y"' },
      { path: 'either', message: 'expected a number >= 10, got 3' },
      { path: '["odd key"]', message: 'expected boolean, got string "yes"' },
      {
        path: 'extra',
        message: 'is not a known key (expected one of: name, count, ratio, mode, items, either, odd key)',
      },
    ],
  );
  t.deepEqual(validate(schema, {}), [{ path: 'name', message: 'is required but missing' }]);
  t.deepEqual(validate(schema, []), [{ path: '(root)', message: 'expected object, got array []' }]);
});

test('assertValid throws one error listing every problem, with code ESCHEMA', (t) => {
  const err = t.throws(() => assertValid(schema, { name: 'toolong', count: -1 }, 'widget'));
  t.is(
    err?.message,
    'Invalid widget: name: expected at most 5 characters, got 7; count: expected a number >= 0, got -1',
  );
  t.is((err as Error & { code: string }).code, 'ESCHEMA');
  t.deepEqual(assertValid<{ name: string }>(schema, { name: 'a' }, 'widget'), { name: 'a' });
});
