// A Wyoming connection's claim on one of the agent's live sessions (http.maxSessions: the ones dashboard voice
// and vision sockets take too). Called a claim, not a slot: "slot" is the runtime's word (`voice.vad`). Any
// accepted connection may `describe` and `ping`; a session is claimed when a flow that runs
// model work starts and given back as soon as nothing of the connection's runs or waits for input, or when it
// closes, however it closes (end, reset, malformed frame, idle timeout). A role names its flow-starting events in
// FLOW_STARTS (wake word detection: `detect`) and needs nothing else.

/** Events that start a flow needing a live session, and the role the session is listed under. */
export const FLOW_STARTS: Readonly<Record<string, string>> = {
  transcribe: 'transcribe',
  'audio-start': 'transcribe',
  synthesize: 'synthesize',
  'synthesize-start': 'synthesize',
  transcript: 'handle',
  detect: 'wake',
};

/** What a client refused for want of a live session is told to wait before it tries again. */
export const SESSION_RETRY_AFTER_S = 2;

export interface SessionSource {
  /** A release function for a free session claimed by `role`, or undefined when all are taken. */
  acquire(role: string): (() => void) | undefined;
  /** The refusal in words: how many are open, which setting raises the limit. */
  refusal(): string;
}

export class WyomingSessionClaim {
  readonly #source: SessionSource | undefined;
  readonly #refuse: (code: string, text: string) => void;
  #held: { role: string; release: () => void } | undefined;
  #refused = false;

  /** `refuse` sends the `error` event and closes the connection. */
  constructor(source: SessionSource | undefined, refuse: (code: string, text: string) => void) {
    this.#source = source;
    this.#refuse = refuse;
  }

  get role(): string | undefined {
    return this.#held?.role;
  }

  /** A session was refused: the connection is closing and reads nothing more. */
  get refused(): boolean {
    return this.#refused;
  }

  /** Claims a session for the flow `eventType` starts (true when it needs none or got one). */
  takeFor(eventType: string): boolean {
    const role = FLOW_STARTS[eventType];
    return role === undefined || this.take(role);
  }

  take(role: string): boolean {
    if (this.#held || !this.#source || this.#refused) return !this.#refused;
    const release = this.#source.acquire(role);
    if (release) {
      this.#held = { role, release };
      return true;
    }
    this.#refused = true;
    this.#refuse('EBUSY', `${this.#source.refusal()}; retry in ${SESSION_RETRY_AFTER_S} s`);
    return false;
  }

  /** Gives the session back when `busy` is false; safe to call after every event and job. */
  releaseUnless(busy: boolean): void {
    const h = this.#held;
    if (!h || busy) return;
    this.#held = undefined;
    h.release();
  }
}
