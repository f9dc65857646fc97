// Splits a model's streamed answer into the user's text and its tool calls, piece by piece. Text goes out as
// soon as it cannot be the start of tool markup; a piece that may begin a tag (`<tool_c`) is held back until the
// next piece decides, so no markup ever reaches the user's text. A call is handed on once its markup closed
// and it passed its checks (parse-calls.ts): a client never receives a call that then turns out malformed.
// Markup that cannot be read goes back into the text, with the reason in `errors`; nothing here throws.
import type { ToolCall, ToolCallDelta, ToolSpec } from '../chat-model.js';
import type { ToolFormat } from './format.js';
import { newToolCallId } from './ids.js';
import {
  checkCall,
  DEFAULT_TOOL_CALL_LIMITS,
  type Parsed,
  parseHermesBody,
  parseJsonAnswer,
  parseMistralBody,
  parseXmlBody,
  type ToolCallLimits,
} from './parse-calls.js';

export interface ToolStreamOutput {
  /** The user's text this piece released (may be empty). */
  text: string;
  /** Calls completed by this piece: each one's head, then its arguments in pieces. */
  deltas: ToolCallDelta[];
}

interface Marker {
  open: string;
  /** Undefined: the call runs to the end of the answer. */
  close?: string;
  parse(body: string): Parsed;
}

/** Arguments go out in pieces of this many characters, as OpenAI streams them. */
const ARGUMENT_PIECE = 48;

function markersOf(format: ToolFormat, tools: readonly ToolSpec[]): Marker[] {
  const hermes: Marker = { open: '<tool_call>', close: '</tool_call>', parse: parseHermesBody };
  switch (format.kind) {
    case 'hermes':
      return [hermes];
    case 'qwen-xml':
      return [
        { open: '<tool_call>', close: '</tool_call>', parse: (b) => parseXmlBody(b, tools) },
        // Qwen3-Coder sometimes leaves out the wrapper.
        {
          open: '<function=',
          close: '</function>',
          parse: (b) => parseXmlBody(`<function=${b}</function>`, tools),
        },
      ];
    case 'mistral':
      return [{ open: '[TOOL_CALLS]', parse: parseMistralBody }];
    case 'llama3-json':
      return [{ open: '<|python_tag|>', parse: parseJsonAnswer }];
    case 'generic-json':
      return [hermes];
  }
}

export interface ToolStreamOptions {
  limits?: ToolCallLimits;
  newId?: () => string;
}

export class ToolCallStreamParser {
  readonly calls: ToolCall[] = [];
  readonly errors: string[] = [];
  readonly #markers: Marker[];
  readonly #tools: readonly ToolSpec[];
  readonly #limits: ToolCallLimits;
  readonly #newId: () => string;
  /** Llama 3.x and the fallback write a call as the whole answer: `{` (or a fence) first means "hold it all". */
  readonly #jsonAtStart: boolean;
  #mode: 'text' | 'call' | 'whole' = 'text';
  #marker: Marker | undefined;
  #buf = '';
  /** No text but whitespace went out yet. */
  #atStart = true;
  /** Whitespace after a call is held: it separates calls and is not the user's text. */
  #afterCall = false;

  constructor(format: ToolFormat, tools: readonly ToolSpec[], options: ToolStreamOptions = {}) {
    this.#tools = tools;
    this.#markers = markersOf(format, tools);
    this.#limits = options.limits ?? DEFAULT_TOOL_CALL_LIMITS;
    this.#newId = options.newId ?? (() => newToolCallId(format.idStyle));
    this.#jsonAtStart = format.kind === 'llama3-json' || format.kind === 'generic-json';
  }

  /** Markup over this size is given up on (its text goes out as text): a bound on what one call may hold. */
  get #maxMarkup(): number {
    return this.#limits.maxArgumentBytes * 2 + 4096;
  }

  push(piece: string): ToolStreamOutput {
    const out: ToolStreamOutput = { text: '', deltas: [] };
    this.#buf += piece;
    this.#run(out);
    return out;
  }

  /** The end of the answer: held text goes out, an open call is read as it stands. */
  finish(): ToolStreamOutput {
    const out: ToolStreamOutput = { text: '', deltas: [] };
    const rest = this.#buf;
    this.#buf = '';
    if (this.#mode === 'whole') {
      const parsed = parseJsonAnswer(rest);
      // An answer that is JSON but no call (the user asked for JSON) is plain text, not a failed call.
      const looksLikeCall = /"name"\s*:/.test(rest);
      if (parsed.ok || looksLikeCall) this.#complete(rest, parsed, out);
      else this.#emit(rest, out);
    } else if (this.#mode === 'call' && this.#marker) {
      const m = this.#marker;
      const parsed = m.parse(rest);
      if (m.close && !parsed.ok) {
        this.errors.push(`unclosed ${m.open}: ${parsed.reason}`);
        this.#emit(m.open + rest, out);
      } else this.#complete(m.open + rest, parsed, out);
    } else if (!(this.#afterCall && rest.trim() === '')) {
      this.#emit(rest, out);
    }
    this.#mode = 'text';
    return out;
  }

  #emit(text: string, out: ToolStreamOutput): void {
    if (text.length === 0) return;
    out.text += text;
    if (text.trim() !== '') {
      this.#atStart = false;
      this.#afterCall = false;
    }
  }

  #run(out: ToolStreamOutput): void {
    for (;;) {
      if (this.#mode === 'text') {
        if (!this.#textStep(out)) return;
      } else if (this.#mode === 'call' && this.#marker?.close) {
        const m = this.#marker;
        const close = m.close ?? '';
        const at = this.#buf.indexOf(close);
        if (at < 0) {
          this.#bound(out);
          return;
        }
        const body = this.#buf.slice(0, at);
        this.#buf = this.#buf.slice(at + close.length);
        this.#mode = 'text';
        this.#complete(m.open + body + close, m.parse(body), out);
      } else {
        this.#bound(out);
        return;
      }
    }
  }

  /** One step in text mode; false when it must wait for more. */
  #textStep(out: ToolStreamOutput): boolean {
    if ((this.#jsonAtStart && this.#atStart) || this.#afterCall) {
      const t = this.#buf.trimStart();
      if (t === '') return false;
      if (this.#jsonAtStart && this.#atStart) {
        if (t.length < 3 && '```'.startsWith(t)) return false;
        if (t[0] === '{' || t[0] === '[' || t.startsWith('```')) {
          this.#mode = 'whole';
          return false;
        }
      }
    }
    let best: { at: number; marker: Marker } | undefined;
    for (const marker of this.#markers) {
      const at = this.#buf.indexOf(marker.open);
      if (at >= 0 && (!best || at < best.at)) best = { at, marker };
    }
    if (best) {
      const before = this.#buf.slice(0, best.at);
      if (!(this.#afterCall && before.trim() === '')) this.#emit(before, out);
      this.#buf = this.#buf.slice(best.at + best.marker.open.length);
      this.#marker = best.marker;
      this.#mode = 'call';
      return true;
    }
    const hold = this.#heldSuffix();
    this.#emit(this.#buf.slice(0, this.#buf.length - hold), out);
    this.#buf = this.#buf.slice(this.#buf.length - hold);
    return false;
  }

  /** The longest end of the buffer that may be the start of an opening tag. */
  #heldSuffix(): number {
    let hold = 0;
    for (const { open } of this.#markers) {
      for (let n = Math.min(open.length - 1, this.#buf.length); n > hold; n--) {
        if (this.#buf.endsWith(open.slice(0, n))) {
          hold = n;
          break;
        }
      }
    }
    return hold;
  }

  /** Markup that grows past the bound is not a call: it goes out as text, with the reason. */
  #bound(out: ToolStreamOutput): void {
    if (this.#buf.length <= this.#maxMarkup) return;
    const open = this.#mode === 'call' ? (this.#marker?.open ?? '') : '';
    this.errors.push(`tool call markup over ${this.#maxMarkup} characters was left as text`);
    const text = open + this.#buf;
    this.#buf = '';
    this.#mode = 'text';
    this.#atStart = false;
    this.#emit(text, out);
  }

  /** The calls of one markup block, all or none: a block with one bad call stays text, with the reason. */
  #checked(parsed: Parsed): { ok: true; calls: ToolCall[] } | { ok: false; reason: string } {
    if (!parsed.ok) return { ok: false, reason: `unreadable tool call: ${parsed.reason}` };
    if (this.calls.length + parsed.calls.length > this.#limits.maxCalls)
      return { ok: false, reason: `more than ${this.#limits.maxCalls} tool calls in one answer` };
    const calls: ToolCall[] = [];
    for (const raw of parsed.calls) {
      const c = checkCall(raw, this.#tools, this.#limits, this.#newId);
      if (!c.ok) return c;
      calls.push(c.call);
    }
    return { ok: true, calls };
  }

  #complete(markup: string, parsed: Parsed, out: ToolStreamOutput): void {
    const checked = this.#checked(parsed);
    if (!checked.ok) {
      this.errors.push(checked.reason);
      this.#emit(markup, out);
      return;
    }
    for (const call of checked.calls) {
      const index = this.calls.length;
      this.calls.push(call);
      out.deltas.push({ index, kind: 'start', id: call.id, name: call.name });
      const json = JSON.stringify(call.arguments);
      for (let i = 0; i < json.length; i += ARGUMENT_PIECE)
        out.deltas.push({ index, kind: 'arguments', text: json.slice(i, i + ARGUMENT_PIECE) });
    }
    this.#afterCall = true;
    this.#atStart = false;
  }
}

/** A whole answer at once: the user's text, the calls and the reasons markup was kept as text. */
export function parseToolAnswer(
  text: string,
  format: ToolFormat,
  tools: readonly ToolSpec[],
  options: ToolStreamOptions = {},
): { text: string; calls: ToolCall[]; errors: string[] } {
  const p = new ToolCallStreamParser(format, tools, options);
  const a = p.push(text);
  const b = p.finish();
  return { text: a.text + b.text, calls: p.calls, errors: p.errors };
}
