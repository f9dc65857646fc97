// The tool parts of a chat completion request: `tools`, `tool_choice`, `parallel_tool_calls`, the calls of
// assistant messages (`tool_calls`, arguments as a JSON string on OpenAI's wire) and `tool` messages answering
// them by `tool_call_id`. Errors name the parameter as OpenAI's do.
import type { ToolCall, ToolChoice, ToolSpec } from '../shared/chat-model.js';
import { DEFAULT_TOOL_CALL_LIMITS } from '../shared/template/parse-calls.js';
import { readToolSpecs } from '../shared/template/tool-specs.js';
import { invalidRequest } from './errors.js';

export interface ToolRequest {
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  /** false: at most one call per answer (the first; later ones are dropped). */
  parallelToolCalls: boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function parseToolRequest(body: Record<string, unknown>): ToolRequest {
  let tools: ToolSpec[] = [];
  if (body['tools'] !== undefined && body['tools'] !== null) {
    const read = readToolSpecs(body['tools']);
    if (!read.ok) throw invalidRequest(read.problem.message, read.problem.param);
    tools = read.tools;
  }
  const raw = body['tool_choice'];
  let toolChoice: ToolChoice = 'auto';
  if (raw === 'none' || raw === 'auto' || raw === 'required') toolChoice = raw;
  else if (isObject(raw)) {
    const fn = raw['function'];
    if (raw['type'] !== 'function' || !isObject(fn) || typeof fn['name'] !== 'string')
      throw invalidRequest(
        'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}',
        'tool_choice',
      );
    toolChoice = { name: fn['name'] };
  } else if (raw !== undefined && raw !== null) {
    throw invalidRequest('tool_choice must be "none", "auto", "required" or a named function', 'tool_choice');
  }
  if (toolChoice !== 'auto' && toolChoice !== 'none' && tools.length === 0)
    throw invalidRequest('tool_choice needs tools to choose from', 'tool_choice');
  if (typeof toolChoice === 'object' && !tools.some((t) => t.function.name === toolChoice.name))
    throw invalidRequest(
      `tool_choice names ${JSON.stringify(toolChoice.name)}, which is not among the tools`,
      'tool_choice.function.name',
    );
  const parallel = body['parallel_tool_calls'];
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw invalidRequest('parallel_tool_calls must be a boolean', 'parallel_tool_calls');
  return { tools, toolChoice, parallelToolCalls: parallel !== false };
}

/** An assistant message's `tool_calls`: arguments arrive as a JSON string and are kept as the object it holds. */
export function parseAssistantCalls(raw: unknown, param: string): ToolCall[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw invalidRequest(`${param} must be an array`, param);
  return raw.map((c, i): ToolCall => {
    const p = `${param}[${i}]`;
    if (!isObject(c)) throw invalidRequest(`${p} must be an object`, p);
    if (c['type'] !== undefined && c['type'] !== 'function')
      throw invalidRequest(`${p}.type must be "function"`, `${p}.type`);
    if (typeof c['id'] !== 'string' || c['id'].length === 0)
      throw invalidRequest(`${p}.id must be a non-empty string`, `${p}.id`);
    const fn = c['function'];
    if (!isObject(fn) || typeof fn['name'] !== 'string' || fn['name'].length === 0)
      throw invalidRequest(`${p}.function.name must be a non-empty string`, `${p}.function.name`);
    const rawArgs = fn['arguments'];
    let args: unknown = rawArgs ?? {};
    if (typeof rawArgs === 'string') {
      if (Buffer.byteLength(rawArgs) > DEFAULT_TOOL_CALL_LIMITS.maxArgumentBytes)
        throw invalidRequest(
          `${p}.function.arguments is over ${DEFAULT_TOOL_CALL_LIMITS.maxArgumentBytes} bytes`,
          `${p}.function.arguments`,
        );
      try {
        args = rawArgs.trim() === '' ? {} : JSON.parse(rawArgs);
      } catch {
        throw invalidRequest(
          `${p}.function.arguments must be a JSON object (as a string)`,
          `${p}.function.arguments`,
        );
      }
    }
    if (!isObject(args))
      throw invalidRequest(`${p}.function.arguments must be a JSON object`, `${p}.function.arguments`);
    return { id: c['id'], name: fn['name'], arguments: args };
  });
}

/** A `tool` message's call id, which must answer a call an earlier assistant message made. */
export function toolResultOf(
  m: Record<string, unknown>,
  param: string,
  earlier: ReadonlyMap<string, string>,
): { toolCallId: string; toolName: string } {
  const id = m['tool_call_id'];
  if (typeof id !== 'string' || id.length === 0)
    throw invalidRequest(
      `${param}.tool_call_id must be the id of the call it answers`,
      `${param}.tool_call_id`,
    );
  const name = earlier.get(id);
  if (name === undefined)
    throw invalidRequest(
      `${param}.tool_call_id ${JSON.stringify(id)} answers no call of an earlier assistant message`,
      `${param}.tool_call_id`,
    );
  return { toolCallId: id, toolName: name };
}
