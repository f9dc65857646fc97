// What crosses from an MCP server into the assistant: tool lists cut to what the chat APIs accept, results
// turned into bounded text. Pure functions, so every odd shape a server may send is fed here directly.
import test from 'ava';
import { mapTools, outcomeOf, truncate } from '../../agent/workloads/tools/mcp/results.js';

const limits = { maxTools: 3, maxDescriptionChars: 10, maxSchemaChars: 200 };
const obj = { type: 'object', properties: {} };

test('tools with unusable names, non-object schemas, duplicates or oversized schemas are left out, saying why', (t) => {
  const { tools, skipped } = mapTools(
    [
      { name: 'HassTurnOn', description: 'Turns on a device', inputSchema: obj },
      { name: 'bad name!', inputSchema: obj },
      { name: 'Listy', inputSchema: { type: 'array' } },
      { name: 'HassTurnOn', inputSchema: obj },
      { name: 'Big', inputSchema: { type: 'object', description: 'x'.repeat(300) } },
      { name: 'GetLiveContext', inputSchema: obj, annotations: { readOnlyHint: true } },
    ],
    limits,
  );
  t.deepEqual(tools, [
    { name: 'HassTurnOn', description: 'Turns on …', parameters: obj },
    { name: 'GetLiveContext', parameters: obj },
  ]);
  t.deepEqual(skipped, [
    '"bad name!": not a usable tool name',
    'Listy: its input schema is not an object schema',
    'HassTurnOn: listed twice',
    'Big: its input schema has 334 characters, over 200',
  ]);
});

test('no more than maxTools are taken', (t) => {
  const many = Array.from({ length: 5 }, (_, i) => ({ name: `t${i}`, inputSchema: obj }));
  const { tools, skipped } = mapTools(many, limits);
  t.is(tools.length, 3);
  t.deepEqual(skipped, ['2 tools over the limit of 3']);
});

test('results: text joined, other parts named, errors kept as errors, structured content as data', (t) => {
  t.deepEqual(
    outcomeOf(
      {
        content: [
          { type: 'text', text: 'Turned on kitchen' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'ha://x', text: 'inline text' } },
        ],
      },
      1_000,
    ),
    { ok: true, content: 'Turned on kitchen\n[image image/png, about 3 bytes, not shown]\ninline text' },
  );
  t.deepEqual(outcomeOf({ content: [], isError: true }, 100), {
    ok: false,
    content: '(the tool failed without a message)',
  });
  t.deepEqual(outcomeOf({ structuredContent: { on: true } }, 100), {
    ok: true,
    content: '{"on":true}',
    data: { on: true },
  });
});

test('truncation keeps within the limit and says how long the text was', (t) => {
  const cut = truncate('y'.repeat(5_000), 200);
  t.true(cut.length <= 200);
  t.true(cut.endsWith('[truncated: the result had 5000 characters, the limit is 200]'));
  t.is(truncate('short', 200), 'short');
});
