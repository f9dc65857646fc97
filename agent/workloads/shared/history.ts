// Bounds a conversation's history (user/assistant pairs, oldest first) for the next prompt.
//
// The engine keeps the KV of the longest token prefix a prompt shares with the one before, so a window that
// slides by one exchange every turn breaks that prefix right after the system prompt on every turn once it is
// full: each turn then prefills the whole history again. Dropping several exchanges at once, when the limit is
// passed, keeps the prefix the same for the turns in between (a full prefill once every few turns instead of on
// every turn), for the price of a shorter memory right after a trim.
import type { ChatMessage } from './chat-model.js';

/** Exchanges dropped at once when the history passes `maxMessages`: a third of the window, at least one. */
export function trimStep(maxMessages: number): number {
  return 2 * Math.max(1, Math.floor(maxMessages / 6));
}

/** Drops the oldest exchanges once `history` holds more than `maxMessages` messages. In place. */
export function trimHistory(history: ChatMessage[], maxMessages: number): void {
  if (history.length <= maxMessages) return;
  const keep = Math.max(Math.min(2, maxMessages), maxMessages - trimStep(maxMessages));
  let drop = history.length - keep;
  drop += drop % 2;
  history.splice(0, Math.min(history.length, drop));
}
