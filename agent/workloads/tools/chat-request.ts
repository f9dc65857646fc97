// The dashboard's typed chat request (POST /api/assistant/chat), checked before anything runs: every fault names
// the field, so the page can show what to fix, and nothing half-valid reaches the model.
//
//   { "messages": [{ "role": "user", "content": "set a timer for 5 minutes" }],
//     "images": ["data:image/jpeg;base64,..."], "conversationId": "tab-42" }
import { HttpError } from '../../../lib/http-error.js';
import type { ChatMessage } from '../shared/chat-model.js';

export interface AssistantChatRequest {
  messages: ChatMessage[];
  images: string[];
  conversationId?: string;
}

export const CHAT_LIMITS = {
  messages: 200,
  contentChars: 32_768,
  images: 4,
  conversationIdChars: 128,
} as const;
const ROLES = new Set(['system', 'user', 'assistant']);

const bad = (message: string) => new HttpError(400, 'invalid_request', message);

export function parseAssistantChatRequest(body: unknown): AssistantChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw bad('The body must be a JSON object with "messages"');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !['messages', 'images', 'conversationId'].includes(k));
  if (unknown.length > 0)
    throw bad(
      `Unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (expected messages, images, conversationId)`,
    );
  const raw = b['messages'];
  if (!Array.isArray(raw) || raw.length === 0) throw bad('messages must be a non-empty array');
  if (raw.length > CHAT_LIMITS.messages)
    throw bad(`messages has ${raw.length} entries, over the limit of ${CHAT_LIMITS.messages}`);
  const messages = raw.map((m, i): ChatMessage => {
    if (typeof m !== 'object' || m === null)
      throw bad(`messages[${i}] must be an object with role and content`);
    const { role, content } = m as Record<string, unknown>;
    if (typeof role !== 'string' || !ROLES.has(role))
      throw bad(`messages[${i}].role must be system, user or assistant, not ${JSON.stringify(role)}`);
    if (typeof content !== 'string') throw bad(`messages[${i}].content must be a string`);
    if (content.length > CHAT_LIMITS.contentChars)
      throw bad(
        `messages[${i}].content has ${content.length} characters, over the limit of ${CHAT_LIMITS.contentChars}`,
      );
    return { role: role as ChatMessage['role'], content };
  });
  if (messages[messages.length - 1]!.role !== 'user') throw bad("The last of messages must be the user's");
  const images = b['images'] ?? [];
  if (!Array.isArray(images) || images.some((x) => typeof x !== 'string'))
    throw bad('images must be an array of data URL strings');
  if (images.length > CHAT_LIMITS.images)
    throw bad(`images has ${images.length} entries, over the limit of ${CHAT_LIMITS.images}`);
  const id = b['conversationId'];
  if (
    id !== undefined &&
    (typeof id !== 'string' || id.length === 0 || id.length > CHAT_LIMITS.conversationIdChars)
  )
    throw bad(`conversationId must be a string of 1 to ${CHAT_LIMITS.conversationIdChars} characters`);
  return { messages, images: images as string[], ...(typeof id === 'string' ? { conversationId: id } : {}) };
}
