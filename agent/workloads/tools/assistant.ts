// The acting assistant: a model, a conversation and the tool sources in, an answer out, with the tool rounds in
// between. Each round the model sees the turn's frozen tool list (catalog.ts); the calls it makes run in parallel,
// bounded one by one (run-call.ts), and go back to it as `tool` messages. The rounds are bounded in count and the
// turn in time; a turn that hits either bound ends with a sentence of its own saying so, and so does a turn whose
// tool failed when the model answers nothing. Tool results are data: nothing in them is read by this loop.
import type { ImageInput } from '../../../engine/index.js';
import type { ChatMessage, ChatModel, ChatResult, ChatStream, ToolCall } from '../shared/chat-model.js';
import { buildCatalog, type CatalogReport, type ToolCatalog } from './catalog.js';
import { runCall, type ToolCallRecord } from './run-call.js';
import type { ToolSource } from './types.js';

export type { ToolCallRecord } from './run-call.js';

/** Why a turn ended: the model's own reasons, or one of the loop's bounds. */
export type AssistantFinish = Exclude<ChatResult['finishReason'], 'tool_calls'> | 'max_rounds' | 'budget';

export interface AssistantUsage {
  promptTokens: number;
  generatedTokens: number;
  prefillMs: number;
  decodeMs: number;
}

/** What a streaming UI is told as the turn goes (the dashboard's chat sends these as NDJSON lines). */
export type AssistantEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: Record<string, unknown> }
  | {
      type: 'tool_result';
      id: string;
      name: string;
      ok: boolean;
      content: string;
      ms: number;
      outcome: ToolCallRecord['outcome'];
    }
  | { type: 'done'; finishReason: AssistantFinish; usage: AssistantUsage };

export interface AssistantLimits {
  maxRounds: number;
  callTimeoutMs: number;
  turnBudgetMs: number;
  maxResultBytes: number;
}

export interface AssistantSettings {
  /** false: the model answers with no tools offered. */
  enabled: boolean;
  allowRemoteActs: boolean;
  limits: AssistantLimits;
}

export interface AssistantRequest {
  /** The conversation, system prompt first when there is one; the last message is the user's. */
  messages: ChatMessage[];
  images?: ImageInput[];
  audio?: Float32Array;
  maxNewTokens?: number;
  signal?: AbortSignal;
  /** The caller is another machine: tools that act on the board are left out unless allowed. */
  remote?: boolean;
  onEvent?: (event: AssistantEvent) => void;
}

export interface AssistantTurn {
  /** Everything shown or spoken, every round's text and the loop's own notice. */
  text: string;
  finishReason: AssistantFinish;
  calls: ToolCallRecord[];
  /** Model calls made. */
  rounds: number;
  usage: AssistantUsage;
  /** The last model call's result (timings and KV reuse for the turn's metrics). */
  last: ChatResult | undefined;
  /** The loop's own sentence (bounds hit, a failed tool and no answer), already part of `text`. */
  notice?: string;
  tools: CatalogReport & { offered: string[] };
}

export interface AssistantDeps {
  /** Read at the start of every turn: sources added or removed by a settings change count from the next turn. */
  sources: () => readonly ToolSource[];
  settings: () => AssistantSettings;
  now?: () => number;
  /** Every call as it ends (telemetry's counts per tool and outcome). */
  onCall?: (record: ToolCallRecord) => void;
}

/** Calls past this in one model answer are answered as errors, not run. */
export const MAX_CALLS_PER_ROUND = 8;
/** A call's arguments as JSON, at most this many bytes. */
export const MAX_ARGUMENT_BYTES = 16 * 1024;

class BudgetSpent extends Error {}

function usageOf(results: readonly ChatResult[]): AssistantUsage {
  const sum = (k: keyof AssistantUsage) => results.reduce((a, r) => a + (r[k] ?? 0), 0);
  return {
    promptTokens: sum('promptTokens'),
    generatedTokens: sum('generatedTokens'),
    prefillMs: sum('prefillMs'),
    decodeMs: sum('decodeMs'),
  };
}

/** Ids the model's calls can be told apart by: parsers may give none or repeat one. */
function uniqueIds(calls: readonly ToolCall[], round: number, seen: Set<string>): ToolCall[] {
  return calls.map((c, i) => {
    let id = typeof c.id === 'string' && c.id.length > 0 && c.id.length <= 64 ? c.id : `call_${round}_${i}`;
    if (seen.has(id)) id = `call_${round}_${i}_${seen.size}`;
    seen.add(id);
    return { ...c, id };
  });
}

function noticeFor(
  finish: AssistantFinish,
  calls: readonly ToolCallRecord[],
  text: string,
  limits: AssistantLimits,
) {
  if (finish === 'max_rounds')
    return `I stopped after ${limits.maxRounds} rounds of tool calls without finishing.`;
  if (finish === 'budget')
    return `I ran out of time: the turn's limit of ${Math.round(limits.turnBudgetMs / 1000)} seconds passed.`;
  const failed = calls.filter((c) => !c.ok);
  if (failed.length > 0 && text.trim().length === 0) {
    const names = [...new Set(failed.map((c) => c.name))].join(', ');
    return `Sorry, ${names} did not work: ${failed[failed.length - 1]!.content.replace(/^Error: /, '')}`;
  }
  return undefined;
}

/** The model's pieces to `onPiece` as they come; its result (also of a stream that broke off) into `results`. */
async function readStream(
  stream: ChatStream,
  onPiece: (piece: string) => void,
  results: ChatResult[],
): Promise<void> {
  try {
    for await (const piece of stream) onPiece(piece);
  } finally {
    const result = await stream.result.catch(() => undefined);
    if (result) results.push(result);
  }
}

function notRun(c: ToolCall, round: number): ToolCallRecord {
  return {
    id: c.id,
    name: c.name,
    arguments: c.arguments,
    ok: false,
    outcome: 'bad-arguments',
    content: `Error: more than ${MAX_CALLS_PER_ROUND} calls in one answer; this one was not run`,
    truncated: false,
    ms: 0,
    round,
  };
}

export class ActingAssistant {
  readonly #deps: AssistantDeps;
  readonly #now: () => number;

  constructor(deps: AssistantDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => performance.now());
  }

  /** The tools a turn would see now, with the clashes and failures (the dashboard's and the docs' view). */
  async catalog(remote = false, signal?: AbortSignal): Promise<ToolCatalog> {
    const s = this.#deps.settings();
    if (!s.enabled) return buildCatalog([], { remote, allowRemoteActs: false, listTimeoutMs: 1 });
    return buildCatalog(this.#deps.sources(), {
      remote,
      allowRemoteActs: s.allowRemoteActs,
      listTimeoutMs: s.limits.callTimeoutMs,
      ...(signal ? { signal } : {}),
    });
  }

  async run(model: ChatModel, request: AssistantRequest): Promise<AssistantTurn> {
    // Copied once: a settings change (or anything a tool returns) cannot move the bounds of a running turn.
    const settings = this.#deps.settings();
    const limits: AssistantLimits = { ...settings.limits };
    const remote = request.remote ?? false;
    const emit = (e: AssistantEvent) => request.onEvent?.(e);
    const budget = new AbortController();
    const budgetTimer = setTimeout(
      () => budget.abort(new BudgetSpent(`turn budget of ${limits.turnBudgetMs} ms spent`)),
      limits.turnBudgetMs,
    );
    const signal = AbortSignal.any([budget.signal, ...(request.signal ? [request.signal] : [])]);
    const messages = [...request.messages];
    const calls: ToolCallRecord[] = [];
    const results: ChatResult[] = [];
    const seenIds = new Set<string>();
    let text = '';
    let finish: AssistantFinish = 'stop';
    let catalog: ToolCatalog | undefined;
    try {
      catalog = await this.catalog(remote, signal);
      // A model whose template cannot show tools (tiny fixtures, base models) answers in words, not an error.
      // Images and audio go with tools: the rendered prompt places them in the user's turn (tool-turn.ts).
      const toolsOffered = catalog.specs.length > 0 && model.supportsTools?.() !== false;
      for (let round = 0; ; round++) {
        const lastChance = round >= limits.maxRounds;
        if (text.length > 0 && !/\s$/.test(text)) {
          text += ' ';
          emit({ type: 'text', text: ' ' });
        }
        const stream = model.generate({
          messages,
          ...(request.images ? { images: request.images } : {}),
          ...(request.audio ? { audio: request.audio } : {}),
          ...(request.maxNewTokens !== undefined ? { maxNewTokens: request.maxNewTokens } : {}),
          signal,
          ...(toolsOffered ? { tools: [...catalog.specs], toolChoice: lastChance ? 'none' : 'auto' } : {}),
        });
        await readStream(
          stream,
          (piece) => {
            text += piece;
            emit({ type: 'text', text: piece });
          },
          results,
        );
        signal.throwIfAborted();
        const result = results[results.length - 1]!;
        const wanted = toolsOffered ? (result.toolCalls ?? []) : [];
        if (wanted.length === 0) {
          finish = result.finishReason === 'tool_calls' ? 'stop' : result.finishReason;
          break;
        }
        if (lastChance) {
          finish = 'max_rounds';
          break;
        }
        const roundCalls = uniqueIds(wanted, round, seenIds);
        messages.push({ role: 'assistant', content: result.text, toolCalls: roundCalls });
        for (const c of roundCalls)
          emit({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments });
        const records = await this.#runCalls(roundCalls, catalog, { signal, remote, round, limits, emit });
        calls.push(...records);
        signal.throwIfAborted();
        for (const r of records)
          messages.push({ role: 'tool', content: r.content, toolCallId: r.id, toolName: r.name });
      }
    } catch (err) {
      // The caller's own cancel (barge-in, a closed connection) ends the turn as the caller decides.
      if (request.signal?.aborted) throw err;
      if (!budget.signal.aborted) throw err;
      finish = 'budget';
    } finally {
      clearTimeout(budgetTimer);
    }
    const notice = noticeFor(finish, calls, text, limits);
    if (notice) {
      const piece = text.length > 0 && !/\s$/.test(text) ? ` ${notice}` : notice;
      text += piece;
      emit({ type: 'text', text: piece });
    }
    const usage = usageOf(results);
    emit({ type: 'done', finishReason: finish, usage });
    return {
      text,
      finishReason: finish,
      calls,
      rounds: results.length,
      usage,
      last: results[results.length - 1],
      ...(notice ? { notice } : {}),
      tools: {
        offered: catalog ? [...catalog.entries.keys()] : [],
        clashes: catalog?.clashes ?? [],
        skipped: catalog?.skipped ?? [],
        sourceErrors: catalog?.sourceErrors ?? [],
      },
    };
  }

  /** One answer's calls, all at once; each result goes out as an event as soon as it is there. */
  #runCalls(
    calls: readonly ToolCall[],
    catalog: ToolCatalog,
    o: {
      signal: AbortSignal;
      remote: boolean;
      round: number;
      limits: AssistantLimits;
      emit: (e: AssistantEvent) => void;
    },
  ): Promise<ToolCallRecord[]> {
    const context = { signal: o.signal, remote: o.remote, round: o.round, now: this.#now };
    const limits = { ...o.limits, maxArgumentBytes: MAX_ARGUMENT_BYTES };
    return Promise.all(
      calls.map(async (c, i) => {
        const record =
          i < MAX_CALLS_PER_ROUND ? await runCall(c, catalog, context, limits) : notRun(c, o.round);
        this.#deps.onCall?.(record);
        const { id, name, ok, content, ms, outcome } = record;
        o.emit({ type: 'tool_result', id, name, ok, content, ms, outcome });
        return record;
      }),
    );
  }
}
