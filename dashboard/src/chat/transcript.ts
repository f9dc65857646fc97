import type {
  AssistantChatEvent,
  AssistantChatMessage,
  AssistantChatRequest,
} from '../../../agent/dashboard-api/wire.js';

// The typed conversation as data: what the person wrote (with any images), and each answer as the parts it
// streamed in (text, and tool calls that get their results later). Pure (no DOM): the Chat page draws it, the
// unit test feeds it events. The next request is built from it, so what the page shows is what the model reads.

export interface ToolPart {
  kind: 'tool';
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  result?: { ok: boolean; content: string; ms: number };
}

export type AnswerPart = { kind: 'text'; text: string } | ToolPart;

export interface UserTurn {
  role: 'user';
  text: string;
  /** data: URLs, sent with this turn only. */
  images: string[];
}

export interface AnswerTurn {
  role: 'assistant';
  parts: AnswerPart[];
  state: 'streaming' | 'done' | 'error' | 'stopped';
  error?: string;
  finishReason?: string;
  usage?: Record<string, number | undefined>;
}

export type ChatTurn = UserTurn | AnswerTurn;

export function newAnswer(): AnswerTurn {
  return { role: 'assistant', parts: [], state: 'streaming' };
}

/** The answer's text, without its tool calls: what goes back to the model as the assistant's message. */
export function answerText(turn: AnswerTurn): string {
  return turn.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
}

/** One streamed event folded into the answer (in place); the answer is finished by `done` and `error`. */
export function applyEvent(turn: AnswerTurn, event: AssistantChatEvent): void {
  switch (event.type) {
    case 'text': {
      const last = turn.parts[turn.parts.length - 1];
      if (last?.kind === 'text') last.text += event.text;
      else turn.parts.push({ kind: 'text', text: event.text });
      break;
    }
    case 'tool_call':
      turn.parts.push({ kind: 'tool', id: event.id, name: event.name, arguments: event.arguments });
      break;
    case 'tool_result': {
      const call = turn.parts.find((p): p is ToolPart => p.kind === 'tool' && p.id === event.id);
      const result = { ok: event.ok, content: event.content, ms: event.ms };
      // A result for a call the stream never announced is still shown, not dropped.
      if (call) call.result = result;
      else turn.parts.push({ kind: 'tool', id: event.id, name: '(unannounced call)', arguments: {}, result });
      break;
    }
    case 'done':
      turn.state = 'done';
      turn.finishReason = event.finishReason;
      turn.usage = event.usage;
      break;
    case 'error':
      turn.state = 'error';
      turn.error = event.message;
      break;
  }
}

/** The stream ended: an answer still streaming was cut off (the agent went away or the link broke). */
export function endOfStream(turn: AnswerTurn): void {
  if (turn.state !== 'streaming') return;
  turn.state = 'error';
  turn.error = 'The answer stopped before the agent finished it (the connection was closed).';
}

/** The request for the conversation so far, whose last turn is the person's new message. */
export function chatRequest(turns: readonly ChatTurn[], conversationId: string): AssistantChatRequest {
  const messages: AssistantChatMessage[] = [];
  for (const [i, t] of turns.entries()) {
    if (t.role === 'user') {
      // A message that got no answer at all (the request failed, or was stopped at once) is not history: the
      // page put its text back in the box, and the model would otherwise read it twice.
      const next = turns[i + 1];
      if (next?.role === 'assistant' && next.state !== 'done' && answerText(next).length === 0) continue;
      messages.push({ role: 'user', content: t.text });
    } else {
      // An answer that failed before saying anything is left out, so the model does not read an empty turn.
      const text = answerText(t);
      if (text.length > 0) messages.push({ role: 'assistant', content: text });
    }
  }
  const last = turns[turns.length - 1];
  const images = last?.role === 'user' ? last.images : [];
  return { messages, ...(images.length > 0 ? { images } : {}), conversationId };
}

/** A conversation id that works without a secure context (crypto.randomUUID needs https or localhost). */
export function newConversationId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `chat-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** "0.4 s" / "350 ms" for a tool call's duration. */
export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** A tool call's arguments as the page prints them: pretty JSON. */
export function formatArguments(args: Record<string, unknown>): string {
  return Object.keys(args).length === 0 ? '(none)' : JSON.stringify(args, null, 2);
}

/** "in 4 min 10 s" until a timer rings; "due" once past. */
export function timeLeft(dueAt: number, now: number): string {
  const s = Math.ceil((dueAt - now) / 1000);
  if (s <= 0) return 'due';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `in ${h} h ${m} min`;
  if (m > 0) return `in ${m} min ${sec} s`;
  return `in ${sec} s`;
}
