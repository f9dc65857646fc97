import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { MnnEdgeError } from '../../lib/errors.js';
import { INPUT_LIMITS } from '../../lib/input-limits.js';
import { jsonNestingDepth, parseJsonInput, readJsonFile } from '../../lib/json-input.js';
import { escapeControl, quoteUntrusted } from '../../lib/sanitize.js';
import { type JsonSchema, validate } from '../../lib/schema.js';

const closed: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: { type: 'string' } },
};

test('prototype member names are unknown keys like any other, never a way around additionalProperties', (t) => {
  for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
    const value = JSON.parse(`{"name":"a","${key}":{"evil":true}}`) as unknown;
    t.deepEqual(
      validate(closed, value),
      [{ path: key, message: 'is not a known key (expected one of: name)' }],
      key,
    );
  }
});

test('a required key is only satisfied by an own property, not by one inherited from Object.prototype', (t) => {
  const schema: JsonSchema = { type: 'object', required: ['constructor', 'toString'] };
  t.deepEqual(validate(schema, {}), [
    { path: 'constructor', message: 'is required but missing' },
    { path: 'toString', message: 'is required but missing' },
  ]);
  t.deepEqual(validate(schema, JSON.parse('{"constructor":1,"toString":2}')), []);
});

test('a schema property named like a prototype member validates its value', (t) => {
  const schema: JsonSchema = {
    type: 'object',
    additionalProperties: false,
    // From JSON, as a schema file would give it: an own key named "constructor".
    properties: JSON.parse('{"constructor":{"type":"integer"}}') as Record<string, JsonSchema>,
  };
  t.deepEqual(validate(schema, JSON.parse('{"constructor":1}')), []);
  t.deepEqual(validate(schema, JSON.parse('{"constructor":"x"}')), [
    { path: 'constructor', message: 'expected integer, got string "x"' },
  ]);
});

test('error messages preview deep values without recursing through them, and escape control characters', (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const errors = validate({ type: 'string' }, deep);
  t.is(errors.length, 1);
  t.is(errors[0]!.message, 'expected string, got array [[[...]]]');
  t.deepEqual(validate({ const: 'a' }, deep), [{ path: '(root)', message: 'expected "a", got [[[...]]]' }]);
  const withCsi = validate({ type: 'integer' }, 'x\u009b2Jy\u202e');
  t.is(withCsi[0]!.message, 'expected integer, got string "x\\x9b2Jy\\u202e"');
  const badKey = validate(closed, JSON.parse('{"name":"a","\\u009b31m":1}'));
  t.is(badKey[0]!.path, '["\\x9b31m"]');
});

test('nesting is measured without recursion and strings do not count', (t) => {
  t.is(jsonNestingDepth('[[{"a":[1]}]]', 64), 4);
  t.is(jsonNestingDepth('["[[[[", {"k\\"[": "]]]"}]', 64), 2);
  t.is(jsonNestingDepth('['.repeat(10_000_000), 64), 65);
});

test('1 MiB and 10 MiB of nesting are one clean error each, never a stack overflow', (t) => {
  const mib = (n: number) => '['.repeat((n * 1024 * 1024) / 2) + ']'.repeat((n * 1024 * 1024) / 2);
  const one = t.throws(() => parseJsonInput(mib(1), 'targets document'), { instanceOf: MnnEdgeError });
  t.is(one?.code, 'ETOODEEP');
  t.is(one?.message, `Targets document nests deeper than ${INPUT_LIMITS.jsonMaxDepth} levels`);
  const ten = t.throws(() => parseJsonInput(mib(10), 'targets document', { maxBytes: 64 * 1024 * 1024 }), {
    instanceOf: MnnEdgeError,
  });
  t.is(ten?.code, 'ETOODEEP');
  const big = t.throws(() => parseJsonInput(Buffer.from(mib(10)), 'targets document'));
  t.is((big as MnnEdgeError).code, 'ETOOLARGE');
  t.is(
    big?.message,
    `Targets document is 10485760 bytes, over the limit of ${INPUT_LIMITS.jsonMaxBytes} bytes`,
  );
  t.deepEqual(parseJsonInput('[[[1]]]', 'x', { maxDepth: 3 }), [[[1]]]);
  t.throws(() => parseJsonInput('[[[[1]]]]', 'x', { maxDepth: 3 }), { code: 'ETOODEEP' });
});

test('invalid UTF-8 is EPAYLOAD, not silently replaced', (t) => {
  const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
  const err = t.throws(() => parseJsonInput(bytes, 'MQTT payload'), { instanceOf: MnnEdgeError });
  t.is(err?.code, 'EPAYLOAD');
  t.is(err?.message, 'MQTT payload is not valid UTF-8 text');
  t.deepEqual(parseJsonInput(Buffer.from('{"name":"é"}'), 'MQTT payload'), { name: 'é' });
  const overlong = Buffer.from([0x22, 0xc0, 0xaf, 0x22]);
  t.throws(() => parseJsonInput(overlong, 'x'), { code: 'EPAYLOAD' });
});

test('syntax errors are one line with the quoted part escaped', (t) => {
  const err = t.throws(() => parseJsonInput('{"a": \u001b[2J', 'document'), { code: 'EBADJSON' });
  t.false(err!.message.includes('\u001b'));
  t.false(err!.message.includes('\n'));
  t.regex(err!.message, /^Document is not valid JSON: /);
});

test('readJsonFile: a missing file, a directory and an oversized file are clear errors', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'json-input-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.throws(() => readJsonFile(join(dir, 'nope.json'), 'targets document'), {
    code: 'ENOENT',
    message: `Cannot read targets document ${join(dir, 'nope.json')}: ENOENT (no such file)`,
  });
  t.throws(() => readJsonFile(dir, 'targets document'), { code: 'EIO' });
  writeFileSync(join(dir, 'big.json'), `"${'x'.repeat(2000)}"`);
  t.throws(() => readJsonFile(join(dir, 'big.json'), 'targets document', { maxBytes: 1000 }), {
    code: 'ETOOLARGE',
    message: `Targets document ${join(dir, 'big.json')} is 2002 bytes, over the limit of 1000 bytes`,
  });
  writeFileSync(join(dir, 'ok.json'), '{"a":[1,2]}');
  t.deepEqual(readJsonFile(join(dir, 'ok.json'), 'document'), { a: [1, 2] });
});

test('untrusted text is escaped and bounded', (t) => {
  t.is(escapeControl('a\u001b[31mb\nc\u0085\u202ed'), 'a\\x1b[31mb\\x0ac\\x85\\u202ed');
  t.is(escapeControl('line one\nline two\t!', true), 'line one\nline two\t!');
  t.is(quoteUntrusted('x'.repeat(500), 20), `${'x'.repeat(17)}...`);
});
