// A count of every live Node timer, unref'd ones too, for the soak benchmark's "no growth in timers": the
// telemetry's agent.timers comes from process.getActiveResourcesInfo(), which lists only the timers that keep the
// event loop alive, and most of the agent's periodic timers are unref'd on purpose. The count comes from an
// async_hooks `init` hook on the `Timeout` resource: Node's own record of every timer whatever made it (setTimeout
// and setInterval, node:timers, timers/promises, socket timeouts, libraries). A timer's end is read from the
// Timeout's own `_destroyed` flag (set once it fired or was cleared), not from a `destroy` hook: a destroy hook
// makes Node track every promise with a weak handle until it is collected (thousands a second in the soak), which
// grew the measured agent's own memory. The init hook alone still turns on Node's cheaper promise hook, so the
// census runs only where the bench asks for it (MNN_EDGE_TIMER_CENSUS=1), never in a board's daemon.
import { createHook } from 'node:async_hooks';

/** The environment variable that turns the census on in the daemon (agent/cli/timer-census-env.ts). */
export const TIMER_CENSUS_ENV = 'MNN_EDGE_TIMER_CENSUS';

/** Node's Timeout, as far as the census reads it. */
interface TimeoutLike {
  _destroyed?: boolean;
}

/** Past this many tracked timers, ended ones are dropped at creation too, not only when the count is read. */
const PRUNE_AT = 4096;

let live: Set<TimeoutLike> | undefined;

function prune(timers: Set<TimeoutLike>): void {
  for (const t of timers) if (t._destroyed === true) timers.delete(t);
}

/** Starts counting the timers created from now on; a second call does nothing. */
export function startTimerCensus(): void {
  if (live) return;
  const timers = new Set<TimeoutLike>();
  createHook({
    init(_asyncId, type, _trigger, resource) {
      if (type !== 'Timeout') return;
      timers.add(resource as TimeoutLike);
      if (timers.size > PRUNE_AT) prune(timers);
    },
  }).enable();
  live = timers;
}

/**
 * Timers created since the census started and neither fired (once) nor cleared; undefined without the census.
 * A timer re-armed by refresh() after it fired counts again if no count was read in between (refresh() clears the
 * flag, but a read drops ended timers for good).
 */
export function liveTimers(): number | undefined {
  if (!live) return undefined;
  prune(live);
  return live.size;
}
