// The checks a request's tool list passes before anything is rendered, shared by the APIs that take tools
// (OpenAI, Ollama): each problem names the parameter the way the API's errors do (`tools[2].function.name`).
import type { ToolSpec } from '../chat-model.js';

export interface ToolSpecProblem {
  /** The offending parameter under `tools`, e.g. `tools[1].function.parameters`. */
  param: string;
  message: string;
}

/** OpenAI's rule for function names: letters, digits, underscores and dashes, at most 64. */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const MAX_TOOLS = 128;
/** Bytes of the whole tool list as JSON: every byte of it is prefilled on a small board. */
export const MAX_TOOLS_BYTES = 256 * 1024;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A raw `tools` value as ToolSpecs, or the first problem with it: not an array, a type other than `function`,
 * a missing or malformed name, a duplicate name, a description that is not text, parameters that are not a
 * JSON Schema object. `parameters` may be left out (a function without arguments), as OpenAI allows.
 */
export function readToolSpecs(
  raw: unknown,
  param = 'tools',
): { ok: true; tools: ToolSpec[] } | { ok: false; problem: ToolSpecProblem } {
  const fail = (p: string, message: string) => ({ ok: false as const, problem: { param: p, message } });
  if (!Array.isArray(raw)) return fail(param, `${param} must be an array of tools`);
  if (raw.length > MAX_TOOLS) return fail(param, `${param} holds ${raw.length} tools; at most ${MAX_TOOLS}`);
  if (Buffer.byteLength(JSON.stringify(raw)) > MAX_TOOLS_BYTES)
    return fail(param, `${param} is over ${MAX_TOOLS_BYTES} bytes as JSON`);
  const seen = new Set<string>();
  const tools: ToolSpec[] = [];
  for (const [i, item] of raw.entries()) {
    const p = `${param}[${i}]`;
    if (!isObject(item)) return fail(p, `${p} must be an object`);
    if (item['type'] !== 'function')
      return fail(
        `${p}.type`,
        `${p}.type ${JSON.stringify(item['type'])} is not supported: only "function" tools can be called`,
      );
    const fn = item['function'];
    if (!isObject(fn)) return fail(`${p}.function`, `${p}.function must be an object`);
    const name = fn['name'];
    if (typeof name !== 'string' || !NAME.test(name))
      return fail(
        `${p}.function.name`,
        `${p}.function.name must be 1 to 64 letters, digits, underscores, dots or dashes`,
      );
    if (seen.has(name))
      return fail(`${p}.function.name`, `${p}.function.name ${JSON.stringify(name)} is a duplicate`);
    seen.add(name);
    const description = fn['description'];
    if (description !== undefined && description !== null && typeof description !== 'string')
      return fail(`${p}.function.description`, `${p}.function.description must be a string`);
    const parameters = fn['parameters'] ?? { type: 'object', properties: {} };
    if (!isObject(parameters))
      return fail(`${p}.function.parameters`, `${p}.function.parameters must be a JSON Schema object`);
    if (parameters['type'] !== undefined && parameters['type'] !== 'object')
      return fail(
        `${p}.function.parameters`,
        `${p}.function.parameters must describe an object (type "object"), not ${JSON.stringify(parameters['type'])}`,
      );
    if (parameters['properties'] !== undefined && !isObject(parameters['properties']))
      return fail(
        `${p}.function.parameters.properties`,
        `${p}.function.parameters.properties must be an object`,
      );
    tools.push({
      type: 'function',
      function: { name, ...(typeof description === 'string' ? { description } : {}), parameters },
    });
  }
  return { ok: true, tools };
}
