// A count of every live Node timer, unref'd ones too, for the soak benchmark's "no growth in timers": the
// telemetry's agent.timers comes from process.getActiveResourcesInfo(), which lists only the timers that keep the
// event loop alive, and most of the agent's periodic timers are unref'd on purpose. The count comes from an
// async_hooks hook on the `Timeout` resource: Node's own record of every timer whatever made it (setTimeout and
// setInterval, node:timers, timers/promises, socket timeouts, libraries), ended by its destroy (fired once,
// cleared). The hook also turns on Node's promise hooks, a cost on every promise, so it runs only where the bench
// asks for it (MNN_EDGE_TIMER_CENSUS=1), never in a board's daemon.
import { createHook } from 'node:async_hooks';

/** The environment variable that turns the census on in the daemon (agent/cli/timer-census-env.ts). */
export const TIMER_CENSUS_ENV = 'MNN_EDGE_TIMER_CENSUS';

let live: Set<number> | undefined;

/** Starts counting the timers created from now on; a second call does nothing. */
export function startTimerCensus(): void {
  if (live) return;
  const ids = new Set<number>();
  createHook({
    init(asyncId, type) {
      if (type === 'Timeout') ids.add(asyncId);
    },
    destroy(asyncId) {
      ids.delete(asyncId);
    },
  }).enable();
  live = ids;
}

/**
 * Timers created since the census started and neither fired (once) nor cleared; undefined without the census.
 * A timer re-armed by refresh() after it fired is no longer counted (Node does not announce it again).
 */
export function liveTimers(): number | undefined {
  return live?.size;
}
