// The tool model's script and its tokens: what the model answers, cut into pieces that each become one token, and
// the vocabulary around them. The pieces form two chains to the end-of-turn token; gen_tool_model.cpp turns the
// chains into the lm_head and the two turn openers into its one attention head (docs/TOOL-MODEL.md).
import { invalidParameter } from '../../../lib/errors.js';

/** What the model answers: `call` when the latest turn is the user's, `final` when it is a tool result. */
export interface ToolScript {
  call: { name: string; arguments: Record<string, unknown> };
  final: string;
}

export const DEFAULT_TOOL_SCRIPT: ToolScript = {
  call: { name: 'HassTurnOn', arguments: { name: 'kitchen light' } },
  final: 'The kitchen light is on.',
};

export interface ScriptTokens {
  /** Token id → bytes, the order of tokenizer.txt. */
  vocabulary: Buffer[];
  specialIds: number[];
  stopIds: number[];
  /** The openers of a user turn and of a tool-result turn, as the Qwen2.5 template writes them. */
  userOpener: number;
  toolOpener: number;
  callFirst: number;
  finalFirst: number;
  /** token → the token after it in an answer; the last piece of each answer goes to <|im_end|>. */
  chain: Array<[number, number]>;
  /** The answers as pieces (one token each), and as text (without the end-of-turn token). */
  pieces: { call: string[]; final: string[] };
  callText: string;
  finalText: string;
}

export const END_OF_TURN = '<|im_end|>';
const END_OF_TEXT = '<|endoftext|>';
const IM_START = '<|im_start|>';
export const USER_OPENER = `${IM_START}user\n`;
export const TOOL_OPENER = `${IM_START}user\n<tool_response>`;
// Ids 256-258 as in the project's other tiny models. <|im_start|> is NOT special here: MNN splits special tokens out
// of the text before its longest-match tokenizer runs, and the openers must reach that tokenizer whole, so that a
// turn's role comes in one token and text inside a message can never look like an opener.
const FIXED = [
  END_OF_TEXT,
  IM_START,
  END_OF_TURN,
  USER_OPENER,
  TOOL_OPENER,
  `${IM_START}assistant\n`,
  `${IM_START}system\n`,
  '<tool_call>',
  '</tool_call>',
  '<tool_response>',
  '</tool_response>',
  '<tools>',
  '</tools>',
];
// Pieces common in a tools block and in chat text, so that a prompt takes about one token per 2-3 characters
// instead of one per byte. None contains "<": no token may swallow the start of an opener.
const JSON_PIECES = [
  '{"type": "function", "function": {"name": "',
  '"description": "',
  '"parameters": {"type": "object", "properties": {',
  '{"type": "string"',
  '{"type": "integer"',
  '{"type": "number"',
  '{"type": "boolean"',
  '"required": ["',
  '"enum": ["',
  '", "',
  '": "',
  '"}',
  '"]',
  '}}',
  '}, ',
  '"name"',
  '"area"',
  '"domain"',
  '"device_class"',
];
const WORDS =
  'the a an of and to in is on off you that it for with as at be this from or by not what all we can your turn light lights kitchen living room bedroom set get list state device devices area name value temperature brightness color media player volume timer weather please thanks hello home assistant function call tool user system'.split(
    ' ',
  );

function pythonJson(value: unknown): string {
  // Python's json.dumps layout (", " and ": "), which the template's tojson and Hermes-style calls use.
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A checked script (default DEFAULT_TOOL_SCRIPT); `where` names it in errors. */
export function toolScript(input: unknown = DEFAULT_TOOL_SCRIPT, where = 'script'): ToolScript {
  if (!isPlainObject(input)) throw invalidParameter(where, '{call: {name, arguments}, final}', input);
  const { call, final } = input;
  if (!isPlainObject(call))
    throw invalidParameter(`${where}.call`, '{name: string, arguments: object}', call);
  if (typeof call['name'] !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(call['name']))
    throw invalidParameter(`${where}.call.name`, 'a function name ([A-Za-z0-9_.-]+)', call['name']);
  if (!isPlainObject(call['arguments']))
    throw invalidParameter(`${where}.call.arguments`, 'a JSON object', call['arguments']);
  if (typeof final !== 'string' || final.trim().length === 0)
    throw invalidParameter(`${where}.final`, 'a non-empty sentence', final);
  const args = call['arguments'];
  for (const [what, text] of [
    [`${where}.call.arguments`, JSON.stringify(args)],
    [`${where}.final`, final],
  ] as const) {
    if (text.includes('<|') || text.includes('<tool_call>') || text.includes('</tool_call>'))
      throw invalidParameter(what, 'text without chat-template tags (<|...|>, <tool_call>)', text);
  }
  return { call: { name: call['name'], arguments: args }, final };
}

function finalPieces(final: string, taken: ReadonlySet<string>): string[] {
  // Word by word, so a streaming consumer sees several deltas; as one piece when words repeat (a chain token has one
  // successor) or a word is a single byte (its byte token would carry the chain everywhere it appears).
  const words = final.split(/(?= )/);
  const distinct = new Set(words).size === words.length;
  const ok = distinct && words.every((w) => Buffer.byteLength(w) > 1 && !taken.has(w));
  return ok ? words : [final];
}

/** The script's pieces, the vocabulary around them and the chains the model follows. */
export function scriptTokens(script: ToolScript): ScriptTokens {
  const call = [
    '<tool_call>',
    `\n{"name": ${JSON.stringify(script.call.name)}, "arguments": `,
    pythonJson(script.call.arguments),
    '}\n',
    '</tool_call>',
  ];
  const final = finalPieces(script.final, new Set(call));
  if (final.length === 1 && call.includes(final[0]!))
    throw invalidParameter('script.final', 'a sentence that is not a piece of the call', script.final);

  const vocabulary: Buffer[] = [];
  const ids = new Map<string, number>(); // latin1 of the bytes → id
  const add = (bytes: Buffer): number => {
    const key = bytes.toString('latin1');
    const known = ids.get(key);
    if (known !== undefined) return known;
    ids.set(key, vocabulary.length);
    vocabulary.push(bytes);
    return vocabulary.length - 1;
  };
  for (let b = 0; b < 256; b++) add(Buffer.from([b]));
  for (const t of FIXED) add(Buffer.from(t));
  const callIds = call.map((p) => add(Buffer.from(p)));
  const finalIds = final.map((p) => add(Buffer.from(p)));
  for (const p of JSON_PIECES) add(Buffer.from(p));
  for (const w of WORDS) {
    add(Buffer.from(w));
    add(Buffer.from(` ${w}`));
  }
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  for (const a of letters) for (const b of letters) add(Buffer.from(`${a}${b}`));
  for (const a of letters) add(Buffer.from(` ${a}`));

  const idOf = (t: string) => ids.get(Buffer.from(t).toString('latin1'))!;
  const eot = idOf(END_OF_TURN);
  const chain: Array<[number, number]> = [];
  for (const seq of [callIds, finalIds]) {
    for (const [i, id] of seq.entries()) chain.push([id, seq[i + 1] ?? eot]);
  }
  const from = new Set(chain.map(([f]) => f));
  if (from.size !== chain.length)
    throw invalidParameter('script', 'a call and a final sentence whose pieces are all different', script);
  return {
    vocabulary,
    specialIds: [idOf(END_OF_TEXT), eot],
    stopIds: [eot, idOf(END_OF_TEXT)],
    userOpener: idOf(USER_OPENER),
    toolOpener: idOf(TOOL_OPENER),
    callFirst: callIds[0]!,
    finalFirst: finalIds[0]!,
    chain,
    pieces: { call, final },
    callText: call.join(''),
    finalText: final.join(''),
  };
}
