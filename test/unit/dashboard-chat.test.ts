import test from 'ava';
import type { AssistantChatEvent } from '../../agent/dashboard-api/wire.js';
import { MAX_LINE_CHARS, parseEventLine, readChatEvents } from '../../dashboard/src/chat/stream.js';
import {
  type AnswerTurn,
  applyEvent,
  type ChatTurn,
  chatRequest,
  endOfStream,
  newAnswer,
  newConversationId,
  timeLeft,
} from '../../dashboard/src/chat/transcript.js';

// The Chat page's reading of POST /api/assistant/chat without a browser: NDJSON cut at every awkward place
// becomes the same events, a line that is not an event ends the answer with a reason, and the events fold into
// the answer the page draws (text, tool calls with their results) and into the next request.

/** A body that delivers `chunks` as they are, one read each. */
function body(chunks: ReadonlyArray<string | Uint8Array>): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const x of chunks) c.enqueue(typeof x === 'string' ? enc.encode(x) : x);
      c.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<AssistantChatEvent[]> {
  const out: AssistantChatEvent[] = [];
  for await (const e of readChatEvents(stream)) out.push(e);
  return out;
}

const round: AssistantChatEvent[] = [
  { type: 'tool_call', id: 'c1', name: 'set_timer', arguments: { minutes: 5, label: 'tea' } },
  { type: 'tool_result', id: 'c1', ok: true, content: 'Timer "tea" set for 5 minutes.', ms: 12 },
  { type: 'text', text: 'Tea timer ' },
  { type: 'text', text: 'set — 5 min.' },
  { type: 'done', finishReason: 'stop', usage: { promptTokens: 40, completionTokens: 9 } },
];
const ndjson = round.map((e) => `${JSON.stringify(e)}\n`).join('');

test('the same events however the body is cut: whole, byte by byte, a character split, no last newline', async (t) => {
  t.deepEqual(await all(body([ndjson])), round);
  const bytes = new TextEncoder().encode(ndjson);
  // Byte by byte splits the two bytes of "—" (and every line) across reads.
  t.deepEqual(await all(body([...bytes].map((b) => Uint8Array.of(b)))), round);
  t.deepEqual(await all(body([ndjson.trimEnd()])), round);
  t.deepEqual(await all(body([ndjson.replaceAll('\n', '\r\n')])), round, 'CRLF lines');
  t.deepEqual(await all(body([`\n${ndjson}\n\n`])), round, 'blank lines are skipped');
});

test('a line that is not an event ends the answer with a reason; an unknown type is skipped', async (t) => {
  const got = await all(
    body(['{"type":"text","text":"Hi"}\n', 'oops not json\n', '{"type":"text","text":"lost"}\n']),
  );
  t.is(got.length, 2);
  t.deepEqual(got[0], { type: 'text', text: 'Hi' });
  t.is(got[1]!.type, 'error');
  t.regex((got[1] as { message: string }).message, /not JSON.*oops not json/);
  t.deepEqual(await all(body(['{"type":"thinking","text":"x"}\n{"type":"text","text":"ok"}\n'])), [
    { type: 'text', text: 'ok' },
  ]);
  t.is(parseEventLine('{"type":"tool_call","name":"x"}')?.type, 'error', 'a call without an id');
  t.is(parseEventLine('[1,2]')?.type, 'error');
  t.deepEqual(parseEventLine('{"type":"error","message":"no LLM is placed on voice.llm"}'), {
    type: 'error',
    message: 'no LLM is placed on voice.llm',
  });
  // The agent's error event ends the stream: nothing after it is read.
  t.deepEqual(await all(body(['{"type":"error","message":"boom"}\n{"type":"text","text":"late"}\n'])), [
    { type: 'error', message: 'boom' },
  ]);
});

test('a line without an end past the limit is refused rather than held in memory', async (t) => {
  const huge = `{"type":"text","text":"${'x'.repeat(MAX_LINE_CHARS)}`;
  const got = await all(body(['{"type":"text","text":"a"}\n', huge]));
  t.is(got.length, 2);
  t.regex((got[1] as { message: string }).message, /longer than/);
});

test('events fold into an answer: text joined, each tool call with its arguments and result', (t) => {
  const answer = newAnswer();
  for (const e of round) applyEvent(answer, e);
  t.is(answer.state, 'done');
  t.deepEqual(answer.parts, [
    {
      kind: 'tool',
      id: 'c1',
      name: 'set_timer',
      arguments: { minutes: 5, label: 'tea' },
      result: { ok: true, content: 'Timer "tea" set for 5 minutes.', ms: 12 },
    },
    { kind: 'text', text: 'Tea timer set — 5 min.' },
  ]);
  t.deepEqual(answer.usage, { promptTokens: 40, completionTokens: 9 });

  const failed = newAnswer();
  applyEvent(failed, { type: 'text', text: 'Switching…' });
  applyEvent(failed, { type: 'tool_result', id: 'zz', ok: false, content: 'timed out', ms: 5000 });
  t.is(failed.parts[1]!.kind, 'tool', 'a result for an unannounced call is still shown');
  endOfStream(failed);
  t.is(failed.state, 'error');
  t.regex(failed.error!, /stopped before the agent finished/);
});

test('the next request: the conversation as text, images of the new message only, failed turns left out', (t) => {
  const done: AnswerTurn = newAnswer();
  for (const e of round) applyEvent(done, e);
  const lost: AnswerTurn = newAnswer();
  applyEvent(lost, { type: 'error', message: 'no model' });
  const turns: ChatTurn[] = [
    { role: 'user', text: 'what is this?', images: ['data:image/png;base64,AAAA'] },
    lost,
    { role: 'user', text: 'set a tea timer', images: [] },
    done,
    { role: 'user', text: 'and what is in the picture?', images: ['data:image/jpeg;base64,BBBB'] },
  ];
  t.deepEqual(chatRequest(turns, 'chat-1'), {
    messages: [
      { role: 'user', content: 'set a tea timer' },
      { role: 'assistant', content: 'Tea timer set — 5 min.' },
      { role: 'user', content: 'and what is in the picture?' },
    ],
    images: ['data:image/jpeg;base64,BBBB'],
    conversationId: 'chat-1',
  });
  t.false('images' in chatRequest(turns.slice(0, 4), 'x'), 'no images key when the last message has none');
  t.regex(newConversationId(), /^chat-[0-9a-f]{32}$/);
  t.not(newConversationId(), newConversationId());
});

test('a timer counts down in words', (t) => {
  t.is(timeLeft(10_000, 0), 'in 10 s');
  t.is(timeLeft(250_000, 0), 'in 4 min 10 s');
  t.is(timeLeft(3_900_000, 0), 'in 1 h 5 min');
  t.is(timeLeft(0, 5), 'due');
});
