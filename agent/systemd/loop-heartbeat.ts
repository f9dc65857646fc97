import type { Clock } from '../../lib/clock.js';
import { invalidParameter } from '../../lib/errors.js';

// The main loop calls beat() each time it completes a pass; the watchdog asks healthy(). A loop that is
// wedged on an await (a hung engine host, a stuck SQLite lock) keeps the event loop alive, so timers alone
// cannot see it: only progress of the loop itself proves health.

export interface LoopHeartbeat {
  beat(): void;
  healthy(): boolean;
  /** Milliseconds since the last beat (since creation before the first). */
  silenceMs(): number;
}

export function createLoopHeartbeat(options: { clock: Clock; maxSilenceMs: number }): LoopHeartbeat {
  const { clock, maxSilenceMs } = options;
  if (!Number.isFinite(maxSilenceMs) || maxSilenceMs <= 0) {
    throw invalidParameter('maxSilenceMs', 'a positive number of milliseconds', maxSilenceMs);
  }
  let last = clock.monotonicMs();
  const silenceMs = () => clock.monotonicMs() - last;
  return {
    beat: () => {
      last = clock.monotonicMs();
    },
    healthy: () => silenceMs() <= maxSilenceMs,
    silenceMs,
  };
}
