// The soak bench's timer census: unref'd timers are counted (process.getActiveResourcesInfo() omits them), and a
// timer leaves the count when it fires or is cleared. A file of its own: the census turns on promise hooks for
// the rest of the process.
import test from 'ava';
import { processSampler } from '../../agent/telemetry/samplers.js';
import { liveTimers, startTimerCensus } from '../../agent/telemetry/timer-census.js';
import { until } from '../helpers/until.js';

test("the census counts unref'd timers and intervals until they fire or are cleared; the sampler reports it as agent.timers_all", async (t) => {
  t.is(liveTimers(), undefined, 'off until started');
  t.is((await processSampler().sample())['agent.timers_all'], undefined);
  startTimerCensus();
  startTimerCensus();
  // Timers of other code (ava's) come and go: each step waits for the count it expects, never for a time.
  const base = liveTimers()!;
  const quiet = Array.from({ length: 5 }, () => setTimeout(() => {}, 3_600_000).unref());
  const interval = setInterval(() => {}, 3_600_000).unref();
  let fired = false;
  setTimeout(() => {
    fired = true;
  }, 1).unref();
  t.true(liveTimers()! >= base + 7, `${liveTimers()} live, ${base} before`);
  const m = await processSampler().sample();
  t.true(m['agent.timers_all']! >= base + 7, 'the sampler reports the census');
  t.true(
    m['agent.timers_all']! > m['agent.timers']!,
    `unref'd timers are not in agent.timers (${m['agent.timers']}) but are in the census`,
  );
  await until(() => fired, 'the short timer fired');
  for (const q of quiet) clearTimeout(q);
  clearInterval(interval);
  // Destroy hooks run in a later turn of the loop: the count comes back to where it was, but for the one timer
  // of until()'s own polling.
  await until(() => liveTimers()! <= base + 1, `back to ${base} live timers`, {
    stepMs: 20,
  });
  t.pass();
});
