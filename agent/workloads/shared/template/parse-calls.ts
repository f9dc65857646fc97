// The calls in one piece of tool markup, per syntax (format.ts), and the checks every call passes before it is
// handed on: a tool the request offered, arguments that are a JSON object within the size and depth limits.
// Nothing here throws: what cannot be read is an error string, and the caller keeps the markup as text.
import type { ToolCall, ToolSpec } from '../chat-model.js';

export interface ToolCallLimits {
  /** Bytes of one call's arguments, as JSON. */
  maxArgumentBytes: number;
  /** Nesting of objects and arrays in one call's arguments. */
  maxArgumentDepth: number;
  /** Calls in one answer. */
  maxCalls: number;
}

export const DEFAULT_TOOL_CALL_LIMITS: ToolCallLimits = {
  maxArgumentBytes: 64 * 1024,
  maxArgumentDepth: 16,
  maxCalls: 16,
};

/** A call as written, before its checks. */
export interface RawCall {
  name: unknown;
  arguments: unknown;
  id?: unknown;
}

export type Parsed = { ok: true; calls: RawCall[] } | { ok: false; reason: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, reason: `not JSON (${(err as Error).message})` };
  }
}

/** `{"name", "arguments"|"parameters"}` objects, one or an array of them. */
function callsOfJson(value: unknown): Parsed {
  const list = Array.isArray(value) ? value : [value];
  const calls: RawCall[] = [];
  for (const item of list) {
    if (!isObject(item) || !('name' in item))
      return { ok: false, reason: 'a call must be an object with "name" and "arguments"' };
    const fn = isObject(item['function']) ? item['function'] : item;
    calls.push({
      name: fn['name'],
      arguments: fn['arguments'] ?? fn['parameters'] ?? {},
      ...(item['id'] !== undefined ? { id: item['id'] } : {}),
    });
  }
  return { ok: true, calls };
}

/** Hermes/Qwen: the JSON between `<tool_call>` and `</tool_call>`. */
export function parseHermesBody(body: string): Parsed {
  const json = parseJson(body.trim());
  return json.ok ? callsOfJson(json.value) : json;
}

const FUNCTION = /<function=([^>\n]+)>([\s\S]*?)(?:<\/function>|$)/g;
const PARAMETER = /<parameter=([^>\n]+)>\n?([\s\S]*?)\n?(?:<\/parameter>|(?=<parameter=)|$)/g;

/**
 * Qwen3-Coder/Qwen3.5: `<function=NAME>` with `<parameter=KEY>value</parameter>` lines. Values are text; one that
 * reads as JSON (a number, true, an object) becomes that value unless the tool's schema says the key is a string.
 */
export function parseXmlBody(body: string, tools: readonly ToolSpec[]): Parsed {
  const calls: RawCall[] = [];
  for (const fn of body.matchAll(FUNCTION)) {
    const name = (fn[1] ?? '').trim();
    const props = tools.find((t) => t.function.name === name)?.function.parameters['properties'];
    const args: Record<string, unknown> = {};
    for (const p of (fn[2] ?? '').matchAll(PARAMETER)) {
      const key = (p[1] ?? '').trim();
      const raw = p[2] ?? '';
      const type = isObject(props) && isObject(props[key]) ? props[key]['type'] : undefined;
      const json = type === 'string' ? undefined : parseJson(raw.trim());
      args[key] = json?.ok ? json.value : raw;
    }
    calls.push({ name, arguments: args });
  }
  if (calls.length === 0) return { ok: false, reason: 'no <function=NAME> in the call' };
  return { ok: true, calls };
}

/** Llama 3.x and the generic fallback: the whole answer is a JSON call, or several joined by `;`. */
export function parseJsonAnswer(text: string): Parsed {
  let body = text.trim();
  const fence = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(body);
  if (fence) body = fence[1] ?? '';
  const whole = parseJson(body);
  if (whole.ok) return callsOfJson(whole.value);
  const parts = body.split(/;\s*(?=\{)/);
  if (parts.length < 2) return whole;
  const calls: RawCall[] = [];
  for (const part of parts) {
    const one = parseJson(part);
    if (!one.ok) return one;
    const c = callsOfJson(one.value);
    if (!c.ok) return c;
    calls.push(...c.calls);
  }
  return { ok: true, calls };
}

/** Mistral: what follows `[TOOL_CALLS]`: a JSON array, or `name[ARGS]{…}` (newer templates), repeated. */
export function parseMistralBody(body: string): Parsed {
  const text = body.trim();
  if (text.startsWith('[') || text.startsWith('{')) return parseJsonAnswer(text);
  const calls: RawCall[] = [];
  for (const part of text.split('[TOOL_CALLS]')) {
    const m = /^\s*([\w.-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?\[ARGS\]([\s\S]*)$/.exec(part);
    if (!m) return { ok: false, reason: 'expected a JSON array or NAME[ARGS]{…} after [TOOL_CALLS]' };
    const args = parseJson((m[3] ?? '').trim());
    if (!args.ok) return args;
    calls.push({ name: m[1], arguments: args.value, ...(m[2] ? { id: m[2] } : {}) });
  }
  return { ok: true, calls };
}

function depthOf(v: unknown, limit: number, depth = 0): number {
  if (depth > limit || typeof v !== 'object' || v === null) return depth;
  let max = depth + 1;
  for (const child of Array.isArray(v) ? v : Object.values(v)) {
    max = Math.max(max, depthOf(child, limit, depth + 1));
    if (max > limit) break;
  }
  return max;
}

/** The checks every call passes: a tool the request offered, arguments a JSON object within the limits. */
export function checkCall(
  raw: RawCall,
  tools: readonly ToolSpec[],
  limits: ToolCallLimits,
  newId: () => string,
): { ok: true; call: ToolCall } | { ok: false; reason: string } {
  if (typeof raw.name !== 'string' || raw.name.length === 0)
    return { ok: false, reason: 'the call has no function name' };
  const name = raw.name;
  if (!tools.some((t) => t.function.name === name))
    return {
      ok: false,
      reason: `the model called ${JSON.stringify(name)}, which is not among the tools it may call`,
    };
  let args = raw.arguments;
  // Some models write the arguments as a JSON string, as OpenAI's wire format carries them.
  if (typeof args === 'string') {
    const json = parseJson(args.trim() === '' ? '{}' : args);
    if (!json.ok) return { ok: false, reason: `the arguments of ${name} are ${json.reason}` };
    args = json.value;
  }
  if (!isObject(args)) return { ok: false, reason: `the arguments of ${name} are not a JSON object` };
  const bytes = Buffer.byteLength(JSON.stringify(args));
  if (bytes > limits.maxArgumentBytes)
    return {
      ok: false,
      reason: `the arguments of ${name} are ${bytes} bytes, over the limit of ${limits.maxArgumentBytes}`,
    };
  if (depthOf(args, limits.maxArgumentDepth) > limits.maxArgumentDepth)
    return {
      ok: false,
      reason: `the arguments of ${name} nest deeper than the limit of ${limits.maxArgumentDepth}`,
    };
  const id = typeof raw.id === 'string' && /^[\w-]{1,64}$/.test(raw.id) ? raw.id : newId();
  return { ok: true, call: { id, name, arguments: args } };
}
