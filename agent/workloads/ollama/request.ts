// Validation of POST /api/chat and /api/generate bodies: the subset of Ollama's request the device serves, with
// errors that name the field (`messages[1].images[0]`). Sampling options (temperature, top_p, seed, …) are
// accepted and left to the model's config, as on the OpenAI path; `think` is accepted (a model that thinks does
// so from its own template). What would silently change the answer's shape is refused: `format`, `raw`,
// `suffix`, `template`, `context`.
import type { ChatMessage, ToolCall, ToolSpec } from '../shared/chat-model.js';
import { badRequest } from './errors.js';
import { type KeepAlive, parseKeepAlive } from './keep-alive-duration.js';

export interface ImagePart {
  /** Where in the request it came from, for error messages. */
  param: string;
  base64: string;
}

/** What both endpoints share once parsed. */
export interface OllamaRequest {
  model: string;
  messages: ChatMessage[];
  /** Base64 images, in order; attached to the last user message. */
  images: ImagePart[];
  tools: ToolSpec[] | undefined;
  stream: boolean;
  keepAlive: KeepAlive | undefined;
  /** options.num_ctx: the context the client asks for (capped to the slot's); 0 and absent: the slot's own. */
  numCtx: number | undefined;
  /** options.num_predict when positive; -1 and -2 (no limit, fill the context) leave the model's limit. */
  maxTokens: number | undefined;
  /** No prompt and no messages: Ollama's way of asking to load (or with keep_alive 0, unload) the model. */
  loadOnly: boolean;
}

const ROLES: Record<string, ChatMessage['role']> = {
  system: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool',
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optionalString(body: Record<string, unknown>, key: string, param = key): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badRequest(`${param} must be a string`);
  return v;
}

function imagesOf(raw: unknown, param: string, into: ImagePart[]): void {
  if (raw === undefined || raw === null) return;
  if (!Array.isArray(raw)) throw badRequest(`${param} must be an array of base64 strings`);
  raw.forEach((image, i) => {
    if (typeof image !== 'string' || image.length === 0)
      throw badRequest(`${param}[${i}] must be a base64 string`);
    into.push({ param: `${param}[${i}]`, base64: image });
  });
}

/** `arguments` arrive as an object (Ollama) or, from clients translating OpenAI's shape, as JSON text. */
function callArguments(raw: unknown, param: string): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (isObject(raw)) return raw;
  if (typeof raw === 'string') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isObject(parsed)) return parsed;
    } catch {
      // fall through to the error below
    }
  }
  throw badRequest(`${param} must be a JSON object`);
}

function toolCallsOf(raw: unknown, param: string): ToolCall[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw badRequest(`${param} must be an array`);
  return raw.map((c, i): ToolCall => {
    const p = `${param}[${i}]`;
    const fn = isObject(c) ? c['function'] : undefined;
    if (!isObject(fn) || typeof fn['name'] !== 'string' || fn['name'].length === 0)
      throw badRequest(`${p}.function.name must be a non-empty string`);
    const id = isObject(c) && typeof c['id'] === 'string' ? c['id'] : `call_${i}`;
    return { id, name: fn['name'], arguments: callArguments(fn['arguments'], `${p}.function.arguments`) };
  });
}

function messagesOf(raw: unknown, images: ImagePart[]): ChatMessage[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw badRequest('messages must be an array');
  return raw.map((m, i): ChatMessage => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw badRequest(`${param} must be an object`);
    const role = typeof m['role'] === 'string' ? ROLES[m['role']] : undefined;
    if (!role) throw badRequest(`${param}.role must be one of system, user, assistant, tool`);
    const content = optionalString(m, 'content', `${param}.content`) ?? '';
    const before = images.length;
    imagesOf(m['images'], `${param}.images`, images);
    if (images.length > before && role !== 'user')
      throw badRequest(`${param}: images are accepted in user messages only`);
    const message: ChatMessage = { role, content };
    const calls = toolCallsOf(m['tool_calls'], `${param}.tool_calls`);
    if (calls && calls.length > 0) {
      if (role !== 'assistant') throw badRequest(`${param}.tool_calls: only assistant messages carry calls`);
      message.toolCalls = calls;
    }
    // Home Assistant sends tool results with neither an id nor a name: both stay optional.
    const toolName = optionalString(m, 'tool_name', `${param}.tool_name`);
    if (role === 'tool' && toolName) message.toolName = toolName;
    const toolCallId = optionalString(m, 'tool_call_id', `${param}.tool_call_id`);
    if (role === 'tool' && toolCallId) message.toolCallId = toolCallId;
    return message;
  });
}

function toolsOf(raw: unknown): ToolSpec[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw badRequest('tools must be an array');
  const names = new Set<string>();
  return raw.map((t, i): ToolSpec => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw badRequest(`${p} must be an object`);
    const type = t['type'] ?? 'function';
    if (type !== 'function')
      throw badRequest(`${p}.type ${JSON.stringify(type)} is not supported (expected "function")`);
    const fn = t['function'];
    if (!isObject(fn)) throw badRequest(`${p}.function must be an object`);
    const name = fn['name'];
    if (typeof name !== 'string' || name.length === 0)
      throw badRequest(`${p}.function.name must be a non-empty string`);
    if (names.has(name)) throw badRequest(`${p}.function.name ${JSON.stringify(name)} is listed twice`);
    names.add(name);
    const parameters = fn['parameters'] ?? { type: 'object', properties: {} };
    if (!isObject(parameters)) throw badRequest(`${p}.function.parameters must be a JSON Schema object`);
    const description = fn['description'];
    if (description !== undefined && description !== null && typeof description !== 'string')
      throw badRequest(`${p}.function.description must be a string`);
    return {
      type: 'function',
      function: { name, parameters, ...(typeof description === 'string' ? { description } : {}) },
    };
  });
}

function positiveInt(value: unknown, param: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw badRequest(`${param} must be a positive integer`);
  return value;
}

function optionsOf(raw: unknown): Pick<OllamaRequest, 'numCtx' | 'maxTokens'> {
  if (raw === undefined || raw === null) return { numCtx: undefined, maxTokens: undefined };
  if (!isObject(raw)) throw badRequest('options must be an object');
  const predict = raw['num_predict'];
  let maxTokens: number | undefined;
  // -1: no limit, -2: fill the context; both leave the model's own limit in place.
  if (predict !== -1 && predict !== -2) maxTokens = positiveInt(predict, 'options.num_predict');
  return { numCtx: contextSize(raw['num_ctx']), maxTokens };
}

/**
 * options.num_ctx as Ollama reads it: any number, a fraction cut to an integer. Too large is not an error (the
 * answer caps it to the slot's context, as Ollama caps it to the model's); 0 asks for nothing in particular.
 * Only what cannot be a context size is refused: a negative number, or not a number at all.
 */
function contextSize(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw badRequest(`options.num_ctx must be a number of tokens, not ${JSON.stringify(value)}`);
  if (value < 0) throw badRequest(`options.num_ctx must not be negative (got ${value})`);
  const tokens = Math.trunc(value);
  return tokens === 0 ? undefined : tokens;
}

/** The fields both endpoints share: model, stream, keep_alive, options, think, format. */
function common(body: unknown) {
  if (!isObject(body)) throw badRequest('The request body must be a JSON object');
  const model = body['model'] ?? body['name'];
  if (typeof model !== 'string' || model.trim().length === 0) throw badRequest('model is required');
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw badRequest('stream must be a boolean');
  const think = body['think'];
  if (
    think !== undefined &&
    think !== null &&
    typeof think !== 'boolean' &&
    !['low', 'medium', 'high'].includes(think as string)
  )
    throw badRequest('think must be true, false, "low", "medium" or "high"');
  const format = body['format'];
  if (format !== undefined && format !== null && format !== '')
    throw badRequest('format (structured output) is not supported on this device: leave it out');
  return {
    body,
    model: model.trim(),
    stream: stream !== false,
    keepAlive: parseKeepAlive(body['keep_alive']),
    ...optionsOf(body['options']),
  };
}

export function parseChatRequest(raw: unknown): OllamaRequest {
  const { body, ...shared } = common(raw);
  const images: ImagePart[] = [];
  const messages = messagesOf(body['messages'], images);
  const loadOnly = messages.length === 0;
  if (!loadOnly && !messages.some((m) => m.role === 'user'))
    throw badRequest('messages must contain a user message');
  return { ...shared, messages, images, tools: toolsOf(body['tools']), loadOnly };
}

export function parseGenerateRequest(raw: unknown): OllamaRequest {
  const { body, ...shared } = common(raw);
  if (body['raw'] === true)
    throw badRequest('raw prompts are not supported: the model applies its own template');
  for (const key of ['suffix', 'template'] as const)
    if (optionalString(body, key)) throw badRequest(`${key} is not supported on this device: leave it out`);
  if (Array.isArray(body['context']) && body['context'].length > 0)
    throw badRequest('context (token ids of an earlier answer) is not supported: send /api/chat messages');
  const prompt = optionalString(body, 'prompt') ?? '';
  const system = optionalString(body, 'system');
  const images: ImagePart[] = [];
  imagesOf(body['images'], 'images', images);
  const loadOnly = prompt.length === 0 && images.length === 0;
  const messages: ChatMessage[] = loadOnly
    ? []
    : [...(system ? [{ role: 'system' as const, content: system }] : []), { role: 'user', content: prompt }];
  return { ...shared, messages, images, tools: undefined, loadOnly };
}

/** A base64 image → bytes, bounded before it is decoded; a data URL prefix (Open WebUI) is accepted too. */
export function decodeBase64Image(part: ImagePart, maxBytes: number): Buffer {
  const text = part.base64.replace(/^data:[\w.+-]+\/[\w.+-]+;base64,/i, '');
  if (!/^[A-Za-z0-9+/=\s]+$/.test(text)) throw badRequest(`${part.param} is not base64`);
  if (Math.floor((text.length * 3) / 4) > maxBytes)
    throw badRequest(`${part.param}: the image exceeds ${maxBytes} bytes (vision.maxFrameBytes)`);
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0) throw badRequest(`${part.param} holds no data`);
  return bytes;
}
