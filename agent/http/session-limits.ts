import type { Clock } from '../../lib/clock.js';

// Live sessions (telemetry streams, voice and vision sockets) hold memory and, for voice and vision, an engine.
// Both limits here are per agent: a count of concurrent sessions and a message rate per connection. They are
// exported so the workloads' sockets enforce the same numbers the dashboard shows.

/** WebSocket close codes (4000–4999 are the application's): the browser shows the reason with them. */
export const WS_CLOSE = {
  tooManySessions: 4429,
  rateLimited: 4408,
  messageTooBig: 1009,
} as const;

/** Who holds a live session: the kind of session (`dashboard voice`, `wyoming transcribe`) and the client. */
export interface SessionHolder {
  kind: string;
  who?: string;
}

export interface HeldSession extends SessionHolder {
  /** Wall-clock epoch ms when the slot was taken. */
  sinceMs: number;
}

export interface SessionLimiter {
  readonly limit: number;
  readonly active: number;
  /** Requests for a slot refused because all were taken, since the agent started. */
  readonly refused: number;
  /** A release function when a slot is free, else undefined (the caller refuses with 429 / close 4429). */
  tryAcquire(holder?: SessionHolder): (() => void) | undefined;
  /** The refusal, in words: how many are open and which setting raises the limit. */
  refusal(): string;
  /** Who holds the slots now, oldest first (the dashboard shows them). */
  holders(): HeldSession[];
}

export function createSessionLimiter(limit: number, nowMs: () => number = Date.now): SessionLimiter {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`Session limit must be a positive integer, got ${limit}`);
  const held = new Set<HeldSession>();
  let refused = 0;
  return {
    limit,
    get active() {
      return held.size;
    },
    get refused() {
      return refused;
    },
    tryAcquire(holder = { kind: 'session' }) {
      if (held.size >= limit) {
        refused++;
        return undefined;
      }
      const entry: HeldSession = { ...holder, sinceMs: nowMs() };
      held.add(entry);
      // Idempotent: every path that ends a session may call it (end, close, error, timeout).
      return () => {
        held.delete(entry);
      };
    },
    refusal() {
      return `Too many concurrent sessions: ${held.size} of ${limit} are open (http.maxSessions); close one and retry`;
    },
    holders() {
      return [...held].map((h) => ({ ...h }));
    },
  };
}

/** Messages per second on one connection, as a token bucket: short bursts pass, a flood is refused. */
export class MessageRateLimiter {
  readonly #clock: Pick<Clock, 'monotonicMs'>;
  readonly #perSecond: number;
  readonly #burst: number;
  #tokens: number;
  #lastMs: number;

  constructor(clock: Pick<Clock, 'monotonicMs'>, perSecond: number, burst = perSecond) {
    if (!(perSecond > 0) || !(burst >= 1)) throw new RangeError('Rate and burst must be positive');
    this.#clock = clock;
    this.#perSecond = perSecond;
    this.#burst = burst;
    this.#tokens = burst;
    this.#lastMs = clock.monotonicMs();
  }

  /** Whether one more message may pass now. */
  take(): boolean {
    const now = this.#clock.monotonicMs();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#lastMs) / 1000) * this.#perSecond);
    this.#lastMs = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  describe(): string {
    return `Message rate over ${this.#perSecond}/s (burst ${this.#burst}) on this connection`;
  }
}

export interface LimitsView {
  maxUploadBytes: number;
  maxWsMessageBytes: number;
  maxSessions: number;
  activeSessions: number;
  /** Who holds each live session now. */
  sessionHolders: HeldSession[];
  wsMessagesPerSecond: number;
}
