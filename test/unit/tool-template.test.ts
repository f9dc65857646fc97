import test from 'ava';
import type { ChatMessage, ToolCall, ToolSpec } from '../../agent/workloads/shared/chat-model.js';
import {
  type ToolFormatKind,
  toolFormatKind,
  toolSupport,
} from '../../agent/workloads/shared/template/format.js';
import { alnum9, renderChatPrompt } from '../../agent/workloads/shared/template/render.js';
import {
  parseToolAnswer,
  ToolCallStreamParser,
} from '../../agent/workloads/shared/template/stream-parser.js';
import { type Family, familyTemplate } from '../helpers/chat-templates.js';

const TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'HassTurnOn',
      description: 'Turns on a device or entity',
      parameters: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'Name of the device' },
          brightness: { type: 'integer', description: 'Percent' },
        },
        required: ['name'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'GetLiveContext',
      description: 'The state of the home',
      parameters: { type: 'object', properties: {} },
    },
  },
];

const CALL: ToolCall = { id: 'abcDEF123', name: 'HassTurnOn', arguments: { name: 'kitchen light' } };
const USER: ChatMessage = { role: 'user', content: 'Turn on the kitchen light' };

const EXPECTED_KIND: Record<Family, ToolFormatKind> = {
  'qwen2.5': 'hermes',
  qwen3: 'hermes',
  'qwen3-coder': 'qwen-xml',
  'llama3.2': 'llama3-json',
  mistral: 'mistral',
  hermes3: 'hermes',
};

/** What the template writes for the assistant's call: the full render past the generation prompt, without its end. */
function assistantTurn(family: Family, calls: ToolCall[]): string {
  const tpl = familyTemplate(family);
  const support = toolSupport(tpl);
  if (!support.ok) throw new Error(support.reason);
  const opts = { tools: TOOLS, idStyle: support.format.idStyle };
  const before = renderChatPrompt(tpl, [USER], opts);
  const after = renderChatPrompt(tpl, [USER, { role: 'assistant', content: '', toolCalls: calls }], {
    ...opts,
    addGenerationPrompt: false,
  });
  if (!after.startsWith(before)) throw new Error(`${family}: the history is not an extension of the prompt`);
  let turn = after.slice(before.length).trimEnd();
  for (const end of [tpl.eos, '<|im_end|>', '<|eot_id|>', '</s>'])
    if (turn.endsWith(end)) turn = turn.slice(0, -end.length);
  return turn;
}

for (const family of Object.keys(EXPECTED_KIND) as Family[]) {
  test(`${family}: the format is read from the template, and a rendered call parses back`, (t) => {
    const tpl = familyTemplate(family);
    const support = toolSupport(tpl);
    if (!support.ok) return t.fail(support.reason);
    t.is(support.format.kind, EXPECTED_KIND[family]);
    // The tools reach the prompt.
    t.true(renderChatPrompt(tpl, [USER], { tools: TOOLS }).includes('HassTurnOn'));
    const turn = assistantTurn(family, [CALL]);
    const parsed = parseToolAnswer(turn, support.format, TOOLS);
    t.deepEqual(parsed.errors, []);
    t.deepEqual(
      parsed.calls.map((c) => ({ name: c.name, arguments: c.arguments })),
      [{ name: 'HassTurnOn', arguments: { name: 'kitchen light' } }],
    );
    // Qwen3 writes an empty thinking block before the last turn's call; nothing else is left as text.
    t.is(parsed.text.replace(/<think>\s*<\/think>/, '').trim(), '');
  });

  test(`${family}: streamed at every split, the calls and the text are the same and no markup leaks`, (t) => {
    const tpl = familyTemplate(family);
    const support = toolSupport(tpl);
    if (!support.ok) return t.fail(support.reason);
    const answer = family === 'llama3.2' || family === 'mistral' ? '' : 'Sure. ';
    const whole = answer + assistantTurn(family, [CALL]);
    for (let cut = 0; cut <= whole.length; cut++) {
      for (const pieces of [
        [whole.slice(0, cut), whole.slice(cut)],
        [...whole.slice(0, cut)].concat(whole.slice(cut)),
      ]) {
        const p = new ToolCallStreamParser(support.format, TOOLS, { newId: () => 'id1' });
        let text = '';
        const deltas = [];
        for (const piece of pieces) {
          const o = p.push(piece);
          text += o.text;
          deltas.push(...o.deltas);
        }
        const end = p.finish();
        text += end.text;
        deltas.push(...end.deltas);
        t.false(
          /<tool_call|<function=|\[TOOL_CALLS\]|"parameters"/.test(text),
          `markup in text at ${cut}: ${text}`,
        );
        t.is(p.calls.length, 1, `cut ${cut}`);
        t.deepEqual(p.errors, []);
        t.is(text.replace(/<think>\s*<\/think>/, '').trim(), answer.trim());
        const args = deltas.flatMap((d) => (d.kind === 'arguments' ? [d.text] : [])).join('');
        t.deepEqual(JSON.parse(args), CALL.arguments);
        // Mistral writes the call's id itself; the others get one.
        const id = family === 'mistral' ? CALL.id : 'id1';
        t.deepEqual(deltas[0], { index: 0, kind: 'start', id, name: 'HassTurnOn' });
      }
    }
  });
}

test("a history with a call and its result renders on every family (results without ids take the call's)", (t) => {
  for (const family of Object.keys(EXPECTED_KIND) as Family[]) {
    const tpl = familyTemplate(family);
    const support = toolSupport(tpl);
    if (!support.ok) return t.fail(support.reason);
    const prompt = renderChatPrompt(
      tpl,
      [
        USER,
        { role: 'assistant', content: '', toolCalls: [CALL] },
        { role: 'tool', content: '{"success":true}' },
      ],
      { tools: TOOLS, idStyle: support.format.idStyle },
    );
    t.true(prompt.includes('success'), family);
  }
});

test('Mistral ids are 9 alphanumerics, mapped the same way every turn', (t) => {
  t.is(alnum9('abcDEF123'), 'abcDEF123');
  const a = alnum9('call_0123456789abcdefghijklmn');
  t.regex(a, /^[A-Za-z0-9]{9}$/);
  t.is(alnum9('call_0123456789abcdefghijklmn'), a);
});

test('several calls in one answer (Hermes, Mistral array, Llama joined by ;)', (t) => {
  const two =
    '<tool_call>\n{"name": "HassTurnOn", "arguments": {"name": "a"}}\n</tool_call>\n<tool_call>\n{"name": "GetLiveContext", "arguments": {}}\n</tool_call>';
  const h = parseToolAnswer(two, { kind: 'hermes', idStyle: 'any' }, TOOLS);
  t.deepEqual(
    h.calls.map((c) => c.name),
    ['HassTurnOn', 'GetLiveContext'],
  );
  t.is(h.text, '');
  const m = parseToolAnswer(
    '[TOOL_CALLS][{"name": "HassTurnOn", "arguments": {"name": "a"}, "id": "abcdefghi"}, {"name": "GetLiveContext", "arguments": {}}]',
    { kind: 'mistral', idStyle: 'alnum9' },
    TOOLS,
  );
  t.deepEqual(
    m.calls.map((c) => c.name),
    ['HassTurnOn', 'GetLiveContext'],
  );
  t.is(m.calls[0]?.id, 'abcdefghi');
  t.regex(m.calls[1]?.id ?? '', /^[A-Za-z0-9]{9}$/);
  const l = parseToolAnswer(
    '<|python_tag|>{"name": "HassTurnOn", "parameters": {"name": "a"}}; {"name": "GetLiveContext", "parameters": {}}',
    { kind: 'llama3-json', idStyle: 'any' },
    TOOLS,
  );
  t.deepEqual(
    l.calls.map((c) => c.name),
    ['HassTurnOn', 'GetLiveContext'],
  );
  const mn = parseToolAnswer(
    '[TOOL_CALLS]HassTurnOn[ARGS]{"name": "a"}',
    { kind: 'mistral', idStyle: 'alnum9' },
    TOOLS,
  );
  t.deepEqual(
    mn.calls.map((c) => c.arguments),
    [{ name: 'a' }],
  );
});

test('Qwen XML parameters: JSON values become values, strings stay strings per the schema', (t) => {
  const r = parseToolAnswer(
    '<tool_call>\n<function=HassTurnOn>\n<parameter=name>\n42\n</parameter>\n<parameter=brightness>\n50\n</parameter>\n</function>\n</tool_call>',
    { kind: 'qwen-xml', idStyle: 'any' },
    TOOLS,
  );
  t.deepEqual(r.calls[0]?.arguments, { name: '42', brightness: 50 });
});

test('malformed calls become text with a reason, and never throw', (t) => {
  const hermes = { kind: 'hermes' as const, idStyle: 'any' as const };
  const cases: Array<[string, RegExp]> = [
    ['<tool_call>{"name": "HassTurnOn", "arguments": {"name": }</tool_call>', /not JSON/],
    ['<tool_call>{"name": "OpenTheDoor", "arguments": {}}</tool_call>', /not among the tools it may call/],
    ['<tool_call>{"name": "HassTurnOn", "arguments": [1]}</tool_call>', /not a JSON object/],
    ['<tool_call>{"arguments": {}}</tool_call>', /"name"/],
    ['<tool_call>{"name": "HassTurnOn", "arguments": "{nope"}</tool_call>', /not JSON/],
    ['<tool_call>{"name": "HassTurnOn", "arguments": {"name": "a"', /unclosed <tool_call>/],
    [
      `<tool_call>{"name": "HassTurnOn", "arguments": ${'{"a":'.repeat(20)}1${'}'.repeat(20)}}</tool_call>`,
      /deeper/,
    ],
  ];
  for (const [answer, reason] of cases) {
    const r = parseToolAnswer(answer, hermes, TOOLS);
    t.deepEqual(r.calls, [], answer);
    t.is(r.errors.length, 1, answer);
    t.regex(r.errors[0] ?? '', reason);
    t.is(r.text, answer, 'the markup is kept as text');
  }
  const big = `<tool_call>{"name": "HassTurnOn", "arguments": {"name": "${'x'.repeat(70_000)}"}}</tool_call>`;
  const r = parseToolAnswer(big, hermes, TOOLS);
  t.deepEqual(r.calls, []);
  t.regex(r.errors.join(), /over/);
});

test('an answer that is plain JSON, not a call, is text on the JSON formats', (t) => {
  const r = parseToolAnswer('{"colour": "red"}', { kind: 'generic-json', idStyle: 'any' }, TOOLS);
  t.deepEqual(r, { text: '{"colour": "red"}', calls: [], errors: [] });
  const plain = parseToolAnswer('The light is on.', { kind: 'llama3-json', idStyle: 'any' }, TOOLS);
  t.deepEqual(plain, { text: 'The light is on.', calls: [], errors: [] });
});

test('templates without tools are refused with the reason', (t) => {
  const plain = {
    source:
      '{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}',
    bos: '',
    eos: '<|im_end|>',
    context: {},
  };
  const s = toolSupport(plain);
  t.false(s.ok);
  t.regex(s.ok ? '' : s.reason, /does not show tools/);
  t.false(toolSupport(undefined).ok);
  t.is(toolFormatKind('{{ tools | tojson }}'), 'generic-json');
});
