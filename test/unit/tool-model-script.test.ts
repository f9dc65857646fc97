// The tool model's script and tokens (engine/tools/tool-model/script.ts, docs/TOOL-MODEL.md), without MNN: the pieces
// each answer is cut into, the chains, the openers, and a clear error for a script the model cannot answer.
import test from 'ava';
import { toolModelToolchainMissing } from '../../engine/tools/tool-model/make-tool-model.js';
import {
  DEFAULT_TOOL_SCRIPT,
  scriptTokens,
  TOOL_OPENER,
  toolScript,
  USER_OPENER,
} from '../../engine/tools/tool-model/script.js';
import { MnnEdgeError } from '../../lib/errors.js';

const text = (tokens: ReturnType<typeof scriptTokens>, id: number) => tokens.vocabulary[id]!.toString();

test('the default script: five call pieces and five words, each chained to the next, then <|im_end|>', (t) => {
  const tokens = scriptTokens(toolScript());
  t.deepEqual(tokens.pieces.call, [
    '<tool_call>',
    '\n{"name": "HassTurnOn", "arguments": ',
    '{"name": "kitchen light"}',
    '}\n',
    '</tool_call>',
  ]);
  t.deepEqual(tokens.pieces.final, ['The', ' kitchen', ' light', ' is', ' on.']);
  t.is(
    tokens.callText,
    '<tool_call>\n{"name": "HassTurnOn", "arguments": {"name": "kitchen light"}}\n</tool_call>',
  );
  t.is(tokens.finalText, DEFAULT_TOOL_SCRIPT.final);
  const next = new Map(tokens.chain);
  const walk = (first: number) => {
    const seen = [text(tokens, first)];
    for (let id = next.get(first)!; ; id = next.get(id)!) {
      seen.push(text(tokens, id));
      if (!next.has(id)) return seen;
    }
  };
  t.deepEqual(walk(tokens.callFirst), [...tokens.pieces.call, '<|im_end|>']);
  t.deepEqual(walk(tokens.finalFirst), [...tokens.pieces.final, '<|im_end|>']);
  t.is(text(tokens, tokens.userOpener), USER_OPENER);
  t.is(text(tokens, tokens.toolOpener), TOOL_OPENER);
  t.deepEqual(tokens.stopIds, [258, 256]);
  t.is(text(tokens, 257), '<|im_start|>');
  t.false(
    tokens.specialIds.includes(257),
    '<|im_start|> is not special: the openers must reach the longest match',
  );
});

test('no token but the fixed ones holds "<|": text in a message cannot become or swallow an opener', (t) => {
  const tokens = scriptTokens(toolScript());
  const withTag = tokens.vocabulary.map((b) => b.toString('latin1')).filter((s) => s.includes('<|'));
  t.true(
    withTag.every((s) => s.startsWith('<|')),
    withTag.join(' '),
  );
  t.is(withTag.length, 7);
});

test('a sentence with a repeated word is one piece; arguments keep the Python JSON layout', (t) => {
  const tokens = scriptTokens(
    toolScript({
      call: { name: 'HassLightSet', arguments: { area: 'living room', brightness: 40, on: true } },
      final: 'On and on and on.',
    }),
  );
  t.deepEqual(tokens.pieces.final, ['On and on and on.']);
  t.is(tokens.pieces.call[2], '{"area": "living room", "brightness": 40, "on": true}');
});

test('a script the model cannot answer is refused with the field named', (t) => {
  const refused = (input: unknown, field: string) => {
    const err = t.throws(() => toolScript(input), { instanceOf: MnnEdgeError });
    t.true(err?.message.includes(` for ${field} `), err?.message);
  };
  refused('call it', 'script');
  refused({ call: { name: 'a b', arguments: {} }, final: 'ok' }, 'script.call.name');
  refused({ call: { name: 'X', arguments: [1] }, final: 'ok' }, 'script.call.arguments');
  refused({ call: { name: 'X', arguments: {} }, final: ' ' }, 'script.final');
  refused({ call: { name: 'X', arguments: {} }, final: 'done<|im_end|>' }, 'script.final');
  refused({ call: { name: 'X', arguments: { a: '<tool_call>' } }, final: 'ok' }, 'script.call.arguments');
});

test('without an MNN install the build says what is missing', (t) => {
  const missing = toolModelToolchainMissing({ mnnRoot: '/nonexistent/mnn', mnnSrc: '/nonexistent/src' });
  t.regex(missing ?? '', /MNN headers \(set MNN_ROOT to an MNN install prefix\): \/nonexistent\/mnn\//);
});
