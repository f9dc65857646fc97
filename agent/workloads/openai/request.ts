// Validation of POST /v1/chat/completions bodies: the subset of OpenAI's request the device serves, with errors
// naming the parameter the way OpenAI does (`messages[1].content[0].image_url.url`). Sampling parameters
// (temperature, top_p, …) are accepted and ignored: the model's config decides sampling on the device.
import type { ChatMessage } from '../shared/chat-model.js';
import { invalidRequest } from './errors.js';
import { parseAssistantCalls, parseToolRequest, type ToolRequest, toolResultOf } from './tools.js';

export interface ImagePart {
  /** Where in the request it came from, for error messages. */
  param: string;
  url: string;
}

export interface ChatCompletionRequest extends ToolRequest {
  model: string;
  messages: ChatMessage[];
  /** image_url parts, in order; attached to the last user message. */
  images: ImagePart[];
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number | undefined;
}

const ROLES: Record<string, ChatMessage['role']> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool',
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function contentOf(raw: unknown, param: string, images: ImagePart[]): string {
  if (typeof raw === 'string') return raw;
  if (raw === null || raw === undefined) return '';
  if (!Array.isArray(raw))
    throw invalidRequest(`${param} must be a string or an array of content parts`, param);
  const texts: string[] = [];
  raw.forEach((part, i) => {
    const p = `${param}[${i}]`;
    if (!isObject(part)) throw invalidRequest(`${p} must be an object`, p);
    if (part['type'] === 'text') {
      if (typeof part['text'] !== 'string') throw invalidRequest(`${p}.text must be a string`, `${p}.text`);
      texts.push(part['text']);
    } else if (part['type'] === 'image_url') {
      const image = part['image_url'];
      const url = isObject(image) ? image['url'] : image;
      if (typeof url !== 'string')
        throw invalidRequest(`${p}.image_url.url must be a string`, `${p}.image_url.url`);
      images.push({ param: `${p}.image_url.url`, url });
    } else {
      throw invalidRequest(
        `${p}.type ${JSON.stringify(part['type'])} is not supported here (expected "text" or "image_url")`,
        `${p}.type`,
      );
    }
  });
  return texts.join('\n');
}

export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  if (!isObject(body)) throw invalidRequest('The request body must be a JSON object');
  const model = body['model'];
  if (typeof model !== 'string' || model.length === 0) throw invalidRequest('model is required', 'model');
  const raw = body['messages'];
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalidRequest('messages must be a non-empty array', 'messages');
  }
  const images: ImagePart[] = [];
  // Call id → name, of the calls earlier assistant messages made: a `tool` message must answer one of them.
  const calls = new Map<string, string>();
  const messages = raw.map((m, i): ChatMessage => {
    const param = `messages[${i}]`;
    if (!isObject(m)) throw invalidRequest(`${param} must be an object`, param);
    const role = typeof m['role'] === 'string' ? ROLES[m['role']] : undefined;
    if (!role) {
      throw invalidRequest(
        `${param}.role must be one of system, developer, user, assistant, tool`,
        `${param}.role`,
      );
    }
    const before = images.length;
    const content = contentOf(m['content'], `${param}.content`, images);
    if (images.length > before && role !== 'user') {
      throw invalidRequest(`${param}: images are accepted in user messages only`, `${param}.content`);
    }
    if (role === 'assistant') {
      const toolCalls = parseAssistantCalls(m['tool_calls'], `${param}.tool_calls`);
      if (toolCalls && toolCalls.length > 0) {
        for (const c of toolCalls) calls.set(c.id, c.name);
        return { role, content, toolCalls };
      }
    }
    if (role === 'tool') return { role, content, ...toolResultOf(m, param, calls) };
    return { role, content };
  });
  if (!messages.some((m) => m.role === 'user'))
    throw invalidRequest('messages must contain a user message', 'messages');
  const n = body['n'];
  if (n !== undefined && n !== null && n !== 1) throw invalidRequest('n must be 1 on this device', 'n');
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw invalidRequest('stream must be a boolean', 'stream');
  }
  const maxRaw = body['max_completion_tokens'] ?? body['max_tokens'];
  const maxParam = body['max_completion_tokens'] !== undefined ? 'max_completion_tokens' : 'max_tokens';
  if (
    maxRaw !== undefined &&
    maxRaw !== null &&
    (typeof maxRaw !== 'number' || !Number.isInteger(maxRaw) || maxRaw < 1)
  ) {
    throw invalidRequest(`${maxParam} must be a positive integer`, maxParam);
  }
  const options = body['stream_options'];
  return {
    ...parseToolRequest(body),
    model,
    messages,
    images,
    stream: stream === true,
    includeUsage: isObject(options) && options['include_usage'] === true,
    maxTokens: typeof maxRaw === 'number' ? maxRaw : undefined,
  };
}

/** `data:image/png;base64,…` → bytes. Remote URLs are refused: the device does not fetch on a client's behalf. */
export function decodeDataUrl(part: ImagePart, maxBytes: number): Buffer {
  const m = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[\w-]+=[\w.-]+)*);base64,/i.exec(part.url);
  if (!m) {
    throw invalidRequest(
      `${part.param} must be a data URL (data:image/...;base64,...); the device does not fetch remote images`,
      part.param,
      'invalid_image_url',
    );
  }
  const base64 = part.url.slice(m[0].length);
  // base64 length bounds the decoded size, so an oversized image is refused before it is decoded.
  if (Math.floor((base64.length * 3) / 4) > maxBytes) {
    throw invalidRequest(
      `${part.param}: the image exceeds ${maxBytes} bytes (vision.maxFrameBytes)`,
      part.param,
      'image_too_large',
    );
  }
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0)
    throw invalidRequest(`${part.param}: the data URL holds no data`, part.param, 'invalid_image');
  return bytes;
}
