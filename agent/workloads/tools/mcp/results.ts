// What crosses from an MCP server into the assistant, bounded and in words: its tool list as ToolDefinitions
// (names the chat APIs accept, object schemas, descriptions of sane length) and a call's result as a ToolOutcome
// the model can read (text parts joined, other parts named, a huge result cut with a note that says so).
// Everything here is data from another machine: nothing in it can widen a limit or add a tool beyond `maxTools`.
import type { ToolDefinition, ToolOutcome } from '../types.js';

export interface McpToolShape {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean | undefined } | undefined;
}

export interface McpContentPart {
  type: string;
  text?: unknown;
  mimeType?: unknown;
  data?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: unknown;
}

export interface McpCallResultShape {
  content?: readonly McpContentPart[] | undefined;
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
  /** Servers on the 2024-10-07 protocol answer `toolResult` instead of content. */
  toolResult?: unknown;
}

export interface ToolListLimits {
  maxTools: number;
  maxDescriptionChars: number;
  /** The JSON text of one tool's input schema. */
  maxSchemaChars: number;
}

/** The names OpenAI's and Ollama's tool APIs accept: a model never sees a tool it could not call. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface MappedTools {
  tools: ToolDefinition[];
  /** Why each left-out tool was left out, for the source's status and the log. */
  skipped: string[];
}

/**
 * MCP tools as ToolDefinitions. `inputSchema` becomes `parameters` as it is (it is JSON Schema already); a tool
 * the server marks read-only does not act, every other one may (switching a light does), so it counts as acting.
 */
export function mapTools(tools: readonly McpToolShape[], limits: ToolListLimits): MappedTools {
  const out: ToolDefinition[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  for (const t of tools) {
    if (out.length >= limits.maxTools) {
      skipped.push(`${tools.length - limits.maxTools} tools over the limit of ${limits.maxTools}`);
      break;
    }
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
      skipped.push(`${JSON.stringify(String(t.name).slice(0, 80))}: not a usable tool name`);
      continue;
    }
    if (seen.has(t.name)) {
      skipped.push(`${t.name}: listed twice`);
      continue;
    }
    const schema = t.inputSchema;
    if (
      typeof schema !== 'object' ||
      schema === null ||
      Array.isArray(schema) ||
      schema['type'] !== 'object'
    ) {
      skipped.push(`${t.name}: its input schema is not an object schema`);
      continue;
    }
    const schemaChars = JSON.stringify(schema).length;
    if (schemaChars > limits.maxSchemaChars) {
      skipped.push(
        `${t.name}: its input schema has ${schemaChars} characters, over ${limits.maxSchemaChars}`,
      );
      continue;
    }
    seen.add(t.name);
    const description =
      typeof t.description === 'string' ? clip(t.description, limits.maxDescriptionChars) : undefined;
    out.push({
      name: t.name,
      ...(description ? { description } : {}),
      parameters: schema,
      // Not `acts`: that marks what acts on the board itself (announce). A server's tools act on what its owner
      // connected it for (Home Assistant's lights), for every caller of the assistant, Home Assistant's own
      // Wyoming `handle` included.
    });
  }
  return { tools: out, skipped };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

function describePart(part: McpContentPart): string {
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? part.text : '';
    case 'image':
    case 'audio': {
      const bytes = typeof part.data === 'string' ? Math.floor((part.data.length * 3) / 4) : 0;
      return `[${part.type} ${String(part.mimeType ?? 'of unknown type')}, about ${bytes} bytes, not shown]`;
    }
    case 'resource_link':
      return `[resource ${String(part.name ?? '')} ${String(part.uri ?? '')}]`.replace('  ', ' ');
    case 'resource': {
      const r = part.resource as { text?: unknown; uri?: unknown } | undefined;
      if (typeof r?.text === 'string') return r.text;
      return `[resource ${String(r?.uri ?? '')}, binary, not shown]`;
    }
    default:
      return `[${String(part.type)} content, not shown]`;
  }
}

/** The result as the model reads it; `maxChars` bounds the text, saying how much was cut. */
export function outcomeOf(result: McpCallResultShape, maxChars: number): ToolOutcome {
  let text: string;
  if (Array.isArray(result.content) && result.content.length > 0) {
    text = result.content
      .map(describePart)
      .filter((s) => s.length > 0)
      .join('\n');
  } else if (result.structuredContent !== undefined) {
    text = JSON.stringify(result.structuredContent);
  } else if (result.toolResult !== undefined) {
    text = JSON.stringify(result.toolResult);
  } else {
    text = '';
  }
  const ok = result.isError !== true;
  if (text.length === 0) text = ok ? '(the tool returned no content)' : '(the tool failed without a message)';
  const content = truncate(text, maxChars);
  const data = result.structuredContent;
  return { ok, content, ...(data !== undefined && content === text ? { data } : {}) };
}

export function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const note = `\n[truncated: the result had ${text.length} characters, the limit is ${maxChars}]`;
  return text.slice(0, Math.max(0, maxChars - note.length)) + note;
}
