// options.num_ctx above the slot's context, handled the way Ollama handles one above the model's: the request is
// served within what the board has, with a warning, instead of refused. Home Assistant's Ollama integration sends
// 8192 by default, and a board's slot usually holds 2048: a refusal would make it fail out of the box.
import type { Logger } from '../../../lib/log.js';

export interface FittedContext {
  /** The context the answer runs within: the client's, or the slot's when the client's is larger. */
  numCtx: number | undefined;
  /** Why it was cut, for the answer's last line; absent when the client's fits. */
  warning?: string;
}

export class ContextCap {
  readonly #log: Logger;
  /** "model\0asked": logged once each, so a client that sends it every turn does not flood the log. */
  readonly #logged = new Set<string>();
  /** A client sending a new value each time cannot grow the set without end: the oldest is forgotten. */
  static readonly MAX_REMEMBERED = 256;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** `asked` against the slot's `limit` (undefined or 0: not known, the client's is kept). */
  fit(
    asked: number | undefined,
    limit: number | undefined,
    model: { id: string; slot: string },
  ): FittedContext {
    if (asked === undefined || limit === undefined || limit === 0 || asked <= limit) return { numCtx: asked };
    const warning =
      `options.num_ctx ${asked} is more than the ${limit}-token context ${model.id} is loaded with on this ` +
      `device (slots.${model.slot}.contextTokens); it was capped to ${limit}`;
    const key = `${model.id}\u0000${asked}`;
    if (!this.#logged.has(key)) {
      this.#logged.add(key);
      if (this.#logged.size > ContextCap.MAX_REMEMBERED)
        this.#logged.delete(this.#logged.values().next().value as string);
      this.#log.warn('requested context size too large for the slot: capped', {
        model: model.id,
        slot: model.slot,
        numCtx: asked,
        contextTokens: limit,
      });
    }
    return { numCtx: limit, warning };
  }
}
