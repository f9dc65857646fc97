import test from 'ava';
import { FailureBook } from '../../agent/runtime/desired/failures.js';
import type { RunnerHealth } from '../../agent/runtime/desired/types.js';
import { processMemory, procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { ExclusiveRunner } from '../../agent/runtime/reconciling/runner.js';
import { type Clock, sleep, systemClock } from '../../lib/clock.js';

test('never runs two jobs at once; triggers during a run coalesce into one more run', async (t) => {
  let active = 0;
  let maxActive = 0;
  let runs = 0;
  // Each run waits for the test to release it, so the triggers land inside run 1 however slow the machine is.
  const gates: (() => void)[] = [];
  const runner = new ExclusiveRunner(
    async () => {
      active++;
      runs++;
      maxActive = Math.max(maxActive, active);
      await new Promise<void>((resolve) => gates.push(resolve));
      active--;
    },
    { clock: systemClock, backoff: { baseMs: 10, maxMs: 100 }, stuckAfterMs: 10_000 },
  );
  runner.trigger();
  while (gates.length < 1) await sleep(2);
  for (let i = 0; i < 5; i++) runner.trigger();
  gates[0]!();
  while (gates.length < 2) await sleep(2);
  gates[1]!();
  await runner.settled();
  t.is(maxActive, 1);
  t.is(runs, 2);
  t.is(runner.health().runs, 2);
  await runner.stop();
});

test('a failing job is retried with exponential backoff and the health says why', async (t) => {
  const starts: number[] = [];
  const errors: [number, number][] = [];
  const runner = new ExclusiveRunner(
    async () => {
      starts.push(performance.now());
      if (starts.length < 4) throw new Error(`load failed (${starts.length})`);
    },
    {
      clock: systemClock,
      backoff: { baseMs: 20, maxMs: 50 },
      stuckAfterMs: 10_000,
      onError: (_err, n, retryInMs) => {
        errors.push([n, retryInMs]);
        // Read as the first failure is reported: the retry 20 ms later may already have run by the time a
        // test on a loaded machine looks.
        if (n === 1) afterFirst = runner.health();
      },
    },
  );
  let afterFirst: RunnerHealth | undefined;
  runner.trigger();
  while (!afterFirst) await sleep(5);
  const h = afterFirst;
  t.is(h.consecutiveFailures, 1);
  t.is(h.reason, '1 failed run(s) in a row: load failed (1)');
  t.true(h.healthy);
  while (starts.length < 4) await sleep(5);
  await runner.settled();
  t.deepEqual(errors, [
    [1, 20],
    [2, 40],
    [3, 50],
  ]);
  t.true(starts[1]! - starts[0]! >= 19);
  t.true(starts[3]! - starts[2]! >= 49);
  t.is(runner.health().consecutiveFailures, 0);
  await runner.stop();
});

test('a run that takes too long makes the loop unhealthy; cancel aborts its signal', async (t) => {
  let aborted: unknown;
  const runner = new ExclusiveRunner(
    async (signal) => {
      await sleep(10_000, signal).catch((err: unknown) => {
        aborted = err;
        throw err;
      });
    },
    { clock: systemClock, backoff: { baseMs: 1000, maxMs: 1000 }, stuckAfterMs: 20 },
  );
  runner.trigger();
  // Polled rather than slept: on a loaded machine the run may start late, but it must turn unhealthy.
  const deadline = performance.now() + 10_000;
  while (runner.health().healthy && performance.now() < deadline) await sleep(5);
  const h = runner.health();
  t.false(h.healthy);
  t.true(h.running);
  t.regex(h.reason, /^a run has been going for \d+ ms \(limit 20 ms\)$/);
  await runner.stop();
  t.is((aborted as Error).message, 'runner stopped');
});

test('failure book: a failed candidate is blocked for base × 2^(n−1), and forgotten after a quiet hour', (t) => {
  let now = 0;
  const clock: Clock = { monotonicMs: () => now, nowMs: () => now };
  const book = new FailureBook(clock, { baseMs: 1000, maxMs: 3000, forgetAfterMs: 10_000 });
  t.is(book.record('a', 'x').retryAtMs, 1000);
  t.truthy(book.blocked('a'));
  now = 1000;
  t.is(book.blocked('a'), undefined);
  t.is(book.record('a', 'y').retryAtMs, 3000);
  now = 2000;
  t.is(book.record('a', 'z').retryAtMs, 5000); // capped at maxMs
  t.is(book.nextRetryAtMs(), 5000);
  now = 20_000;
  t.is(book.record('a', 'again').count, 1);
});

test('process memory is read from /proc: RSS, peak and the private anonymous part', async (t) => {
  const m = await processMemory(process.pid);
  t.true(m.rssBytes > 0);
  t.true(m.peakRssBytes >= m.rssBytes);
  t.true(m.anonBytes !== undefined && m.anonBytes > 0 && m.anonBytes <= m.rssBytes);
  const sys = procSystemMemory('/');
  t.true((await sys.memAvailableBytes()) > 0);
  t.true(await sys.processAlive(process.pid));
  t.false(await sys.processAlive(2 ** 22 + 1));
  await t.throwsAsync(processMemory(2 ** 22 + 1), { message: /ENOENT/ });
});
