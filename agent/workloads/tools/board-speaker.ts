// The board's own speaker as the tools see it: the voice session of the board's microphone loop, while one runs.
// A sentence to say waits for the session's running turn to end, so a timer that comes due while someone is
// talking, or an `announce` the running turn itself asked for, never cuts a reply off.
import { errorMessage } from '../../../lib/errors.js';

export interface SpeakingSession {
  say(text: string): void;
  idle(): Promise<void>;
}

export class BoardSpeaker {
  #session: SpeakingSession | undefined;
  #chain: Promise<void> = Promise.resolve();
  readonly #onError: (message: string) => void;

  constructor(onError: (message: string) => void = () => {}) {
    this.#onError = onError;
  }

  /** The board loop's session from now on; the returned function lets go of it (the loop ended). */
  attach(session: SpeakingSession): () => void {
    this.#session = session;
    return () => {
      if (this.#session === session) this.#session = undefined;
    };
  }

  get available(): boolean {
    return this.#session !== undefined;
  }

  /** Queues `text` after the running turn; false when no board session is there to say it. */
  say(text: string): boolean {
    const session = this.#session;
    if (!session) return false;
    this.#chain = this.#chain
      .then(() => session.idle())
      .then(() => {
        if (this.#session === session) session.say(text);
      })
      .catch((err: unknown) => this.#onError(errorMessage(err)));
    return true;
  }
}
