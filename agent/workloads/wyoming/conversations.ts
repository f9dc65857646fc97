// Conversation history for Wyoming's handle program: Home Assistant names a conversation in the event context
// (`conversation_id`); a client that does not gets one per connection. Bounded twice: each history keeps the
// voice section's maxHistoryMessages, and only the most recently used conversations are remembered.
import type { ChatMessage } from '../shared/chat-model.js';
import { trimHistory } from '../shared/history.js';

export class ConversationHistories {
  readonly #max: number;
  readonly #maxMessages: number;
  readonly #histories = new Map<string, ChatMessage[]>();

  constructor(maxConversations: number, maxMessages: number) {
    this.#max = maxConversations;
    this.#maxMessages = maxMessages;
  }

  get size(): number {
    return this.#histories.size;
  }

  /** The history so far (a copy), marking the conversation as most recently used. */
  get(id: string): ChatMessage[] {
    const h = this.#histories.get(id);
    if (!h) return [];
    this.#histories.delete(id);
    this.#histories.set(id, h);
    return [...h];
  }

  remember(id: string, user: ChatMessage, assistant: ChatMessage): void {
    const h = this.#histories.get(id) ?? [];
    this.#histories.delete(id);
    h.push(user, assistant);
    trimHistory(h, this.#maxMessages);
    this.#histories.set(id, h);
    while (this.#histories.size > this.#max) {
      const oldest = this.#histories.keys().next().value;
      if (oldest === undefined) break;
      this.#histories.delete(oldest);
    }
  }
}
