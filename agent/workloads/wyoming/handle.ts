// The handle program's flow on a Wyoming connection: transcript → handled-start, handled-chunk…, handled,
// handled-stop. The reply continues a conversation: the one the client names in context.conversation_id, else
// the connection's own, remembered in the agent's conversation histories (conversations.ts).
import { randomUUID } from 'node:crypto';
import type { ChatMessage } from '../shared/chat-model.js';
import type { WyomingEvent } from './codec.js';
import { checkTextLength, textField } from './event-fields.js';
import type { FlowHost } from './flow.js';

export class HandleFlow {
  readonly #host: FlowHost;
  readonly #connectionConversation = randomUUID();

  constructor(host: FlowHost) {
    this.#host = host;
  }

  transcript(e: WyomingEvent): void {
    const d = this.#host.deps;
    const text = textField(e, 'text');
    checkTextLength(text.length, d.maxTextChars);
    const context = e.data['context'];
    const named =
      typeof context === 'object' && context !== null
        ? (context as Record<string, unknown>)['conversation_id']
        : undefined;
    const conversation =
      typeof named === 'string' && named.length > 0 && named.length <= 128
        ? named
        : this.#connectionConversation;
    const reply = d.voice.replyStage();
    this.#host.enqueue(async (signal) => {
      const user: ChatMessage = { role: 'user', content: text };
      // An empty voice.systemPrompt means none, not an empty system turn.
      const system: ChatMessage[] = d.systemPrompt ? [{ role: 'system', content: d.systemPrompt }] : [];
      const history: ChatMessage[] = [...system, ...d.conversations.get(conversation), user];
      const ctx = { conversation_id: conversation };
      await d.send({ type: 'handled-start', data: { context: ctx } });
      // Through the acting assistant when the voice service has one: a transcript from Home Assistant can set a
      // timer or switch a light. Wyoming is another machine: tools that act on the board stay off unless allowed.
      const stream = reply.reply({ history, signal, remote: true });
      let answer = '';
      for await (const piece of stream) {
        answer += piece;
        await d.send({ type: 'handled-chunk', data: { text: piece } });
      }
      await stream.result;
      signal.throwIfAborted();
      d.conversations.remember(conversation, user, { role: 'assistant', content: answer });
      await d.send({ type: 'handled', data: { text: answer, context: ctx } });
      await d.send({ type: 'handled-stop', data: {} });
    });
  }
}
